#!/usr/bin/env bash
# test-install: scripts/install-c into a temporary prefix, then programs
# built against the installed files only (never the source tree): with
# pkg-config (shared, and static through Libs.private), and with CMake's
# find_package(zoo) (zoo::zoo, zoo::zoo_static, the C++ wrapper). Each
# program runs a tool call on the mock. Ends with "N passed, M failed".
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d /tmp/zoo-install-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
passed=0
failed=0
log=$work/log

# step NAME COMMAND...: runs one check, prints its outcome (and the
# command's output when it fails).
step() {
  local name=$1
  shift
  echo "[ RUN  ] $name"
  if "$@" >"$log" 2>&1; then
    passed=$((passed + 1))
    echo "[  OK  ] $name"
  else
    failed=$((failed + 1))
    sed 's/^/    /' "$log" | tail -n 40
    echo "[ FAIL ] $name"
  fi
}

install_files() {
  # The library the tests built (scripts/build-libzoo).
  ZOO_NO_BUILD=1 PREFIX=$prefix "$root/scripts/install-c" || return 1
  local f
  for f in lib/libzoo.so lib/libzoo.so.0.1 lib/libzoo.a include/zoo.h include/zoo.hpp lib/pkgconfig/zoo.pc \
           lib/cmake/zoo/zooConfig.cmake lib/cmake/zoo/zooConfigVersion.cmake \
           lib/zoo-backends/libggml-cpu-x64.so lib/zoo-backends/libggml-cpu-haswell.so; do
    [ -f "$prefix/$f" ] || { echo "missing $prefix/$f"; return 1; }
  done
  cmp "$prefix/include/zoo.h" "$root/include/zoo.h" || return 1
  # The real file carries the version; the SONAME and the dev name link to it.
  local real
  real=$(readlink -f "$prefix/lib/libzoo.so")
  echo "libzoo.so -> $(readlink "$prefix/lib/libzoo.so") -> $(readlink "$prefix/lib/libzoo.so.0.1"); real file $real"
  [[ $real == "$prefix/lib/libzoo.so.0.1."* ]] || return 1
  # Read whole before searching (pipefail and `grep -q` race: see scripts/package).
  local dynamic
  dynamic=$(readelf -d "$real")
  grep -q 'Library soname: \[libzoo.so.0.1\]' <<<"$dynamic"
}

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig

pkgconfig_shared() {
  local version flags
  version=$(pkg-config --modversion zoo) || return 1
  flags=$(pkg-config --cflags --libs zoo) || return 1
  echo "pkg-config: version $version, flags: $flags"
  # shellcheck disable=SC2086
  cc -std=c11 -Wall -Wextra -Werror "$here/install/hello.c" $flags -o "$work/hello_pc" || return 1
  LD_LIBRARY_PATH=$prefix/lib "$work/hello_pc" | tee "$work/out" || return 1
  # pkg-config's version is the library's; llama.cpp's CPU variant came
  # from the installed zoo-backends/, found beside the installed library.
  grep -q "^libzoo $version:" "$work/out" &&
    grep -q "\"directory\":\"$prefix/lib/zoo-backends\"" "$work/out"
}

pkgconfig_static() {
  # A prefix with only the static library: -lzoo must resolve to libzoo.a
  # and Libs.private must bring everything it needs.
  cp -r "$prefix" "$work/static-prefix" || return 1
  rm "$work/static-prefix/lib/"libzoo.so*
  sed -i "s|^prefix=.*|prefix=$work/static-prefix|" "$work/static-prefix/lib/pkgconfig/zoo.pc"
  local flags
  flags=$(PKG_CONFIG_PATH=$work/static-prefix/lib/pkgconfig pkg-config --static --cflags --libs zoo)
  echo "pkg-config --static: $flags"
  # shellcheck disable=SC2086
  cc -std=c11 -Wall -Wextra -Werror "$here/install/hello.c" $flags -o "$work/hello_pc_static" ||
    return 1
  if ldd "$work/hello_pc_static" | grep -E -q 'libzoo|libllama|libggml'; then
    echo "linked against a shared libzoo or llama.cpp"
    return 1
  fi
  "$work/hello_pc_static" | tee "$work/out" || return 1
  # llama.cpp's CPU backend is built in.
  grep -q '"chosen_by":"built_in"' "$work/out" && grep -q '"directory":null' "$work/out"
}

cmake_consumer() {
  cmake -S "$here/install" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Debug || return 1
  cmake --build "$work/cmake-build" -j 2 || return 1
  LD_LIBRARY_PATH=$prefix/lib "$work/cmake-build/hello_shared" || return 1
  "$work/cmake-build/hello_static" || return 1
  LD_LIBRARY_PATH=$prefix/lib "$work/cmake-build/hello_cpp" || return 1
  # The static program does not need libzoo.so; the shared one records the
  # SONAME, libzoo.so.0.1, neither the dev name nor the install path.
  if ldd "$work/cmake-build/hello_static" | grep -E -q 'libzoo|libllama|libggml'; then return 1; fi
  readelf -d "$work/cmake-build/hello_shared" | grep NEEDED | tee "$work/needed"
  grep -q '\[libzoo.so.0.1\]' "$work/needed"
}

cmake_version_check() {
  # find_package(zoo <version>) accepts 0.1 and refuses 0.2 and 1.0.
  local want ok
  for want in 0.1:yes 0.2:no 1.0:no; do
    mkdir -p "$work/v${want%%:*}"
    cat >"$work/v${want%%:*}/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.10)
project(v C)
find_package(zoo ${want%%:*} QUIET)
if(NOT zoo_FOUND)
  message(FATAL_ERROR "zoo ${want%%:*} not found")
endif()
EOF
    if cmake -S "$work/v${want%%:*}" -B "$work/v${want%%:*}/b" -DCMAKE_PREFIX_PATH="$prefix" \
      >/dev/null 2>&1; then ok=yes; else ok=no; fi
    echo "find_package(zoo ${want%%:*}): found=$ok (expected ${want##*:})"
    [ "$ok" = "${want##*:}" ] || return 1
  done
}

staged_install() {
  # DESTDIR stages the files; the paths inside still name PREFIX.
  ZOO_NO_BUILD=1 DESTDIR=$work/stage PREFIX=/opt/zoo "$root/scripts/install-c" || return 1
  grep -q '^prefix=/opt/zoo$' "$work/stage/opt/zoo/lib/pkgconfig/zoo.pc" &&
    [ -L "$work/stage/opt/zoo/lib/libzoo.so" ] && [ -e "$work/stage/opt/zoo/lib/libzoo.so" ]
}

step "install-c into $prefix" install_files
step "pkg-config: shared library" pkgconfig_shared
step "pkg-config: static library (Libs.private)" pkgconfig_static
step "CMake find_package: zoo::zoo, zoo::zoo_static, zoo.hpp" cmake_consumer
step "CMake package version check" cmake_version_check
step "DESTDIR staged install" staged_install

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
