# tests/nn: model files, networks, optimizers (make check).
