#!/bin/bash
# The Debian package (`make deb`): builds it (build_deb.sh, into DEB_BUILD,
# incremental), then checks its layout and control data, unpacks it into a
# scratch root (dpkg -x) and runs the installed tools from there: the scratch
# root stands for /, so the only help they get is LD_LIBRARY_PATH for the
# package's own libraries (which /usr/lib/<triplet> gives for free when
# installed); the ge Python package, the platform files and the scanner are
# found relative to the binaries, as installed. Then: --version and --json
# "version", the man pages' sections, one bash completion per command knowing
# every option of its --help, the systemd unit (systemd-analyze verify and
# security, when systemd-analyze is there) and lintian (errors fail; when
# lintian is there).
# Usage: check_deb.sh SOURCE_DIR DEB_BUILD VERSION [JOBS]
set -euo pipefail
src=$(cd "$1" && pwd)
deb_build=$2
version=$3
jobs=${4:-2}
work=$(mktemp -d /tmp/ge-deb-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }

# The build's own output is kept: a failed build says why (pipefail would
# otherwise end the script here without a word).
build_log="$work/build_deb.log"
if ! bash "$src/test/install/build_deb.sh" "$src" "$deb_build" "$jobs" > "$build_log" 2>&1; then
  tail -40 "$build_log" >&2
  fail "building the .deb failed (test/install/build_deb.sh; the last lines of its output are above)"
fi
deb=$(tail -1 "$build_log")
[ -f "$deb" ] || { tail -20 "$build_log" >&2; fail "no .deb built"; }
echo "ok: built $(basename "$deb")"

# 1. control data: dependencies computed by dpkg-shlibdeps (libc, Boost,
# libpython) plus the stated ones; the library's shlibs and ldconfig trigger
control=$(dpkg-deb -f "$deb")
depends=$(dpkg-deb -f "$deb" Depends)
for dep in libc6 libboost-python1.74.0 libpython3.11 libsystemd0 python3-numpy procps; do
  grep -q "$dep" <<<"$depends" || fail "Depends lacks $dep: $depends"
done
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "package version is not $version: $control"
dpkg-deb --ctrl-tarfile "$deb" | tar -t > "$work/control.list"
grep -qx ./shlibs "$work/control.list" || fail "no shlibs file"
grep -qx "activate-noawait ldconfig" <(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./triggers) || fail "no ldconfig trigger"
echo "ok: control data (Depends: $depends)"

# 2. the layout
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
listing=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/bin/ge-run ./usr/bin/ge-plugin-ls ./usr/bin/ge-plugin-registryd \
         ./usr/libexec/ge-plugin/ge-plugin-scan ./usr/libexec/ge-plugin/ge-plugin-worker \
         "./usr/lib/$triplet/libge_plugin_framework.so.$version" "./usr/lib/$triplet/libge_plugin_host.so.$version" \
         ./usr/lib/python3/dist-packages/ge/__init__.py \
         ./usr/lib/systemd/system/ge-plugin-registryd.service ./usr/lib/systemd/system/ge-plugin-registryd.socket \
         ./usr/share/bash-completion/completions/ge-run ./usr/share/bash-completion/completions/ge-plugin-ls \
         ./usr/share/bash-completion/completions/ge-plugin-registryd \
         ./usr/share/man/man1/ge-run.1.gz ./usr/share/man/man1/ge-plugin-ls.1.gz \
         ./usr/share/man/man8/ge-plugin-registryd.8.gz \
         ./usr/share/doc/ge-plugin-host/copyright ./usr/share/doc/ge-plugin-host/changelog.gz; do
  grep -qxF "$f" <<<"$listing" || fail "$f is not in the package"
done
grep -q "^./usr/lib/python3/dist-packages/_ge_native.*\.so$" <<<"$listing" || fail "_ge_native is not in dist-packages"
if grep -E '^./usr/bin/ge-plugin-scan$|/__pycache__/|^./usr/local' <<<"$listing"; then
  fail "the package holds files it should not (above)"
fi
echo "ok: layout (multiarch lib/$triplet, /usr/bin, libexec scanner, dist-packages, unit, completion, man pages)"

# 3. unpacked: no RUNPATH (the libraries are on the default path under /usr)
root="$work/root"
dpkg -x "$deb" "$root"
while IFS= read -r f; do
  if readelf -d "$f" 2>/dev/null | grep -E 'RUNPATH|RPATH'; then fail "$f has a RUNPATH"; fi
done < <(find "$root" -type f \( -name '*.so*' -o -path '*/bin/*' -o -path '*/libexec/*' \))
echo "ok: no RUNPATH in the installed binaries"

usr="$root/usr"
export LD_LIBRARY_PATH="$usr/lib/$triplet"
unset GE_PLUGIN_PYTHON_DIR GE_PLUGIN_SCAN GE_PLATFORM_DIR PYTHONPATH GE_PLUGIN_REGISTRY_SOCKET
export GE_PLUGIN_REGISTRY_CACHE="$work/cache/registry.json"
samples="$usr/share/ge-plugin/plugins/samples"

# 4. --version: the project's version, one line "PROGRAM (GE plugin host) VERSION"
for tool in ge-run ge-plugin-ls ge-plugin-registryd; do
  v=$("$usr/bin/$tool" --version)
  [ "$v" = "$tool (GE plugin host) $version" ] || fail "$tool --version printed '$v'"
done
echo "ok: --version"

# 5. the installed ge-run on a sample graph (a platform of the package for compile)
"$usr/bin/ge-run" "$usr/share/ge-plugin/examples/attention_block.json" --opp-path "$samples" \
  --output-dir "$work/out" --soc Ascend910B1 --json > "$work/run.json" 2> "$work/run.log" \
  || { cat "$work/run.log"; fail "installed ge-run failed"; }
/usr/bin/python3 "$src/share/examples/check_attention_block.py" "$work/out" | tail -1
/usr/bin/python3 -c "import json,sys; v=json.load(open(sys.argv[1]))['version']; assert v == sys.argv[2], v" \
  "$work/run.json" "$version" || fail "ge-run --json has no version $version"
echo "ok: installed ge-run (the ge package from dist-packages, the platform files from share/ge-plugin)"
"$usr/bin/ge-run" "$usr/share/ge-plugin/examples/attention_block.json" --opp-path "$samples" --isolation process \
  --output-dir "$work/out-process" --soc Ascend910B1 > "$work/run-process.log" 2>&1 \
  || { cat "$work/run-process.log"; fail "installed ge-run --isolation process failed"; }
/usr/bin/python3 "$src/share/examples/check_attention_block.py" "$work/out-process" | tail -1
echo "ok: installed ge-run --isolation process (the worker from the package's libexec)"

# 6. the installed ge-plugin-ls on the sample plugins: its scanner is the
# package's libexec one (there is no other in the scratch root)
"$usr/bin/ge-plugin-ls" --no-daemon --opp-path "$samples" --json > "$work/ls.json" 2> "$work/ls.log" \
  || { cat "$work/ls.log"; fail "installed ge-plugin-ls failed"; }
/usr/bin/python3 - "$work/ls.json" "$version" <<'PY' || fail "ge-plugin-ls --json (above)"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["version"] == sys.argv[2], j.get("version")
st = {p["name"]: p["status"] for p in j["plugins"]}
bad = {n: s for n, s in st.items() if s != "ok"}
assert st and not bad, st
assert {"gelu", "rms_norm"} <= set(st), st
print(f"{len(st)} sample plugins ok: {', '.join(sorted(st))}")
PY
echo "ok: installed ge-plugin-ls"

# 7. the example engine (share/ge-plugin/examples/engine) built against the
# package's CMake files, run on the sample plugins
cmake -S "$usr/share/ge-plugin/examples/engine" -B "$work/example" -DCMAKE_PREFIX_PATH="$usr" \
  > "$work/example.log" 2>&1 || { cat "$work/example.log"; fail "configuring the example engine failed"; }
cmake --build "$work/example" > "$work/example-build.log" 2>&1 || { cat "$work/example-build.log"; fail "building it failed"; }
"$work/example/ge-example-engine" "$samples" Ascend310P3 > "$work/example-run.log" \
  || { cat "$work/example-run.log"; fail "the example engine failed"; }
grep -q "row sum 1.000000" "$work/example-run.log" || fail "the example engine gave a wrong result"
echo "ok: example engine against the package"

# 8. man pages: the sections help2man made of each --help
for page in man1/ge-run.1.gz man1/ge-plugin-ls.1.gz man8/ge-plugin-registryd.8.gz; do
  text=$(zcat "$usr/share/man/$page")
  for section in NAME SYNOPSIS DESCRIPTION OPTIONS '"EXIT STATUS"' ENVIRONMENT FILES; do
    grep -q "^\.SH $section" <<<"$text" || fail "$page has no $section section"
  done
  grep -qF -- '\-\-version' <<<"$text" || fail "$page does not document --version"
  # Files are named where the package puts them, never by a placeholder.
  grep -q 'PREFIX' <<<"$text" && fail "$page names a file under a literal PREFIX"
  grep -qE '/usr/libexec/ge(\\)?-plugin/' <<<"$text" || [ "$page" = man1/ge-run.1.gz ] ||
    fail "$page does not name the scanner at /usr/libexec/ge-plugin/"
done
echo "ok: man pages (NAME, SYNOPSIS, DESCRIPTION, OPTIONS, EXIT STATUS, ENVIRONMENT, FILES)"

# 9. bash completion: one file per command; it completes every option of the
# command's --help, and completes an option from its prefix
for tool in ge-run ge-plugin-ls ge-plugin-registryd; do
  comp="$usr/share/bash-completion/completions/$tool"
  fn=$(bash -c "source '$comp' && complete -p $tool" | awk '{print $(NF-1)}')
  [ -n "$fn" ] || fail "$comp does not complete $tool"
  words=$(bash -c "source '$comp'; COMP_WORDS=($tool --); COMP_CWORD=1; $fn; printf '%s\n' \"\${COMPREPLY[@]}\"")
  for opt in $("$usr/bin/$tool" --help | grep -oE '^  (-[a-z] \[ )?--[a-z-]+' | grep -oE -- '--[a-z-]+'); do
    grep -qxF -- "$opt" <<<"$words" || fail "$comp does not complete $opt (from $tool --help)"
  done
  one=$(bash -c "source '$comp'; COMP_WORDS=($tool --vers); COMP_CWORD=1; $fn; echo \"\${COMPREPLY[*]}\"")
  [ "$one" = "--version" ] || fail "$tool --vers<TAB> gave '$one'"
done
echo "ok: bash completion"

# 10. the systemd units, as installed (ExecStart under the package's /usr)
if command -v systemd-analyze > /dev/null; then
  units="$usr/lib/systemd/system"
  # verify checks that ExecStart and ExecReload exist and that the units they
  # depend on do: the scratch root is given to it as /, with the system's
  # targets and kill (the package depends on procps) copied in, as on a system
  # where the package is installed; man: pages are looked up in the package.
  mkdir -p "$root/bin"
  cp /bin/kill "$root/bin/kill"
  for u in /usr/lib/systemd/system/*.target; do
    [ -e "$units/$(basename "$u")" ] || cp "$u" "$units/"
  done
  MANPATH="$usr/share/man" systemd-analyze verify --root="$root" /usr/lib/systemd/system/ge-plugin-registryd.service \
    /usr/lib/systemd/system/ge-plugin-registryd.socket 2>&1 | tee "$work/verify.log"
  if grep -v -e "^$" "$work/verify.log" | grep -q .; then fail "systemd-analyze verify complained (above)"; fi
  grep -q "^ExecStart=/usr/bin/ge-plugin-registryd " "$units/ge-plugin-registryd.service" \
    || fail "the unit's ExecStart is not /usr/bin/ge-plugin-registryd"
  systemd-analyze security --offline=true --threshold=40 "$units/ge-plugin-registryd.service" > "$work/security.log" 2>&1 \
    || { cat "$work/security.log"; fail "systemd-analyze security: exposure above 4.0"; }
  echo "ok: systemd units ($(grep -o 'Overall exposure level.*' "$work/security.log"))"
else
  echo "note: systemd-analyze is not installed; the units were not checked"
fi

# 11. lintian: no errors (warnings are printed)
if command -v lintian > /dev/null; then
  lintian --fail-on error --tag-display-limit 0 "$deb" | tee "$work/lintian.log" \
    || fail "lintian found errors (above)"
  echo "ok: lintian ($(grep -c '^E:' "$work/lintian.log" || true) errors, $(grep -c '^W:' "$work/lintian.log" || true) warnings)"
else
  echo "note: lintian is not installed; the package was not linted"
fi
echo "deb check passed"
