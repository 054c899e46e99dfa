# Sourced by test drivers that need Python packages from PyPI (after
# tests/comm/mpi.sh, for skip): rustbpe and tiktoken (issue 33, the
# references of erase's BPE tokenizer), safetensors, tensorboard (issue 37).
#
# venv_need PACKAGE...: $venv_python runs a Python that imports them, from a
# virtual environment at $ERASE_VENV_DIR (default
# ${XDG_CACHE_HOME:-~/.cache}/erase/venv), made once with `python3 -m venv`
# and then reused: packages one driver needs are added to it with pip, under
# an flock on $ERASE_VENV_DIR.lock, so that drivers running at once (make -j)
# each wait for the other's install and none replaces the venv another uses.
# The test is skipped, with the reason, when it cannot be made: no python3 or
# venv module (Debian: python3-venv), or pip failing (PyPI unreachable).
# Import names are the package names with '-' as '_' (tensorboardX: give
# "tensorboardX"); a package whose import name differs is given as
# PACKAGE=MODULE (e.g. protobuf=google.protobuf).
venv_need() {
    : "${ERASE_VENV_DIR:=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/erase/venv}"
    venv_python=$ERASE_VENV_DIR/bin/python
    venv_pkgs= venv_mods=
    for venv_p in "$@"; do
        venv_pkgs="$venv_pkgs ${venv_p%%=*}"
        case $venv_p in *=*) venv_m=${venv_p#*=} ;; *) venv_m=$(echo "$venv_p" | tr - _) ;; esac
        venv_mods="${venv_mods:+$venv_mods,}$venv_m"
    done
    "$venv_python" -c "import $venv_mods" 2>/dev/null && return 0
    command -v python3 >/dev/null 2>&1 || skip "no python3 to make a venv for$venv_pkgs"
    command -v flock >/dev/null 2>&1 || skip "no flock (Debian: util-linux) to share the venv at $ERASE_VENV_DIR"
    mkdir -p "$(dirname "$ERASE_VENV_DIR")" || skip "cannot make $(dirname "$ERASE_VENV_DIR")"
    venv_log=$(mktemp "$ERASE_VENV_DIR.log.XXXXXX") || skip "cannot make a file next to $ERASE_VENV_DIR"
    # shellcheck disable=SC2086
    if ! (
        flock 9 || exit 1
        if ! [ -x "$venv_python" ]; then
            venv_new=$(mktemp -d "$ERASE_VENV_DIR.new.XXXXXX") || exit 1
            python3 -m venv "$venv_new" || { rm -rf "$venv_new"; echo "python3 -m venv failed (Debian: apt-get install python3-venv)"; exit 1; }
            rm -rf "$ERASE_VENV_DIR" && mv "$venv_new" "$ERASE_VENV_DIR" || exit 1
        fi
        "$venv_python" -c "import $venv_mods" 2>/dev/null && exit 0
        timeout 900 "$venv_python" -m pip install -q --disable-pip-version-check $venv_pkgs ||
            { echo "pip install$venv_pkgs failed (PyPI unreachable?)"; exit 1; }
    ) 9>"$ERASE_VENV_DIR.lock" >"$venv_log" 2>&1; then
        venv_why=$(tail -n 1 "$venv_log"); rm -f "$venv_log"
        skip "cannot make a venv with$venv_pkgs at $ERASE_VENV_DIR: $venv_why"
    fi
    rm -f "$venv_log"
    "$venv_python" -c "import $venv_mods" || skip "the venv at $ERASE_VENV_DIR cannot import$venv_pkgs"
}
