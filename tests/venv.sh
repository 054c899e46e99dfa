# Sourced by test drivers that need Python packages from PyPI (after
# tests/comm/mpi.sh, for skip). Issue 33: rustbpe and tiktoken, the
# references of erase's BPE tokenizer.
#
# venv_need PACKAGE...: $venv_python runs a Python that imports them, from a
# virtual environment at $ERASE_VENV_DIR (default
# ${XDG_CACHE_HOME:-~/.cache}/erase/venv), made once with `python3 -m venv`
# and pip, then reused (jobs/test points every build at one). The test is
# skipped, with the reason, when it cannot be made: no python3 or venv
# module (Debian: python3-venv), or pip failing (PyPI unreachable).
venv_need() {
    : "${ERASE_VENV_DIR:=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/erase/venv}"
    venv_python=$ERASE_VENV_DIR/bin/python
    venv_imports=$(echo "$@" | tr ' -' ',_')
    "$venv_python" -c "import $venv_imports" 2>/dev/null && return 0
    command -v python3 >/dev/null 2>&1 || skip "no python3 to make a venv for $*"
    mkdir -p "$(dirname "$ERASE_VENV_DIR")" || skip "cannot make $(dirname "$ERASE_VENV_DIR")"
    venv_new=$(mktemp -d "$ERASE_VENV_DIR.new.XXXXXX") || skip "cannot make a directory next to $ERASE_VENV_DIR"
    if ! python3 -m venv "$venv_new" >"$venv_new.log" 2>&1; then
        venv_why=$(tail -n 1 "$venv_new.log"); rm -rf "$venv_new" "$venv_new.log"
        skip "python3 -m venv failed (Debian: apt-get install python3-venv): $venv_why"
    fi
    if ! timeout 600 "$venv_new/bin/python" -m pip install -q --disable-pip-version-check "$@" >"$venv_new.log" 2>&1; then
        venv_why=$(tail -n 1 "$venv_new.log"); rm -rf "$venv_new" "$venv_new.log"
        skip "pip install $* failed (PyPI unreachable?): $venv_why"
    fi
    rm -f "$venv_new.log"
    # a venv made elsewhere in the meantime is replaced (the same packages)
    rm -rf "$ERASE_VENV_DIR" && mv "$venv_new" "$ERASE_VENV_DIR" || skip "cannot move the venv to $ERASE_VENV_DIR"
    "$venv_python" -c "import $venv_imports" || skip "the venv at $ERASE_VENV_DIR cannot import $*"
}
