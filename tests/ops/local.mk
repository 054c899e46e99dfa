# tests/ops: op gradients and reference checks (make check).
