#!/usr/bin/env bash
# Build the TileStudio app bundle by hand (not part of CI): dist/tilestudio/tilestudio plus a tarball, then check
# that the bundle starts. Run from anywhere, in the environment that has TileStudio's dependencies installed
# (pip install -e ".[gui,gpu]"); PyInstaller is installed into it when missing.
#
#   packaging/build.sh                    build + smoke test (--help, and an offscreen screenshot of the example)
#   packaging/build.sh --install-desktop  also install the .desktop entry and icon for the current user
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
INSTALL_DESKTOP=0
for arg in "$@"; do
  case "$arg" in
    --install-desktop) INSTALL_DESKTOP=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "unknown option: $arg" >&2; exit 2 ;;
  esac
done

if ! "$PYTHON" -c "import PyInstaller" 2>/dev/null; then
  "$PYTHON" -m pip install --quiet "pyinstaller>=6.10"
fi
VERSION="$("$PYTHON" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])' 2>/dev/null || echo dev)"

"$PYTHON" -m PyInstaller --noconfirm --clean --distpath dist --workpath build/pyinstaller packaging/tilestudio.spec

BUNDLE=dist/tilestudio/tilestudio
echo "== smoke test: $BUNDLE --help"
"$BUNDLE" --help >/dev/null
echo "== smoke test: child processes (-m dispatch)"
"$BUNDLE" -m tilestudio analyze --help >/dev/null
echo "== smoke test: analyse and screenshot the example model offscreen"
QT_QPA_PLATFORM=offscreen "$BUNDLE" screenshot resources/examples/transformer_block.py -o build/bundle-smoke.png

TARBALL="dist/tilestudio-${VERSION}-linux-$(uname -m).tar.gz"
tar -C dist -czf "$TARBALL" tilestudio
echo "built $BUNDLE ($(du -sh dist/tilestudio | cut -f1)), $TARBALL"

if [ "$INSTALL_DESKTOP" = 1 ]; then
  APPS="${XDG_DATA_HOME:-$HOME/.local/share}/applications"
  ICONS="${XDG_DATA_HOME:-$HOME/.local/share}/icons/hicolor/scalable/apps"
  mkdir -p "$APPS" "$ICONS"
  cp resources/icons/tilestudio.svg "$ICONS/tilestudio.svg"
  sed -e "s|^Exec=tilestudio|Exec=$PWD/$BUNDLE|" -e "s|^TryExec=tilestudio|TryExec=$PWD/$BUNDLE|" \
    packaging/tilestudio.desktop > "$APPS/tilestudio.desktop"
  command -v update-desktop-database >/dev/null && update-desktop-database "$APPS" || true
  echo "installed $APPS/tilestudio.desktop"
fi
