#!/usr/bin/env bash
# agent-libc.sh TARGET: build the C runtime a static musl agent links for a
# target rustup ships no standard library for (i586-unknown-linux-musl,
# armv7-unknown-linux-musleabihf, arm-unknown-linux-musleabihf: their
# rust-std is not on static.rust-lang.org for this toolchain). Prints the
# directory that holds it: musl's libc.a and crt objects, LLVM's libunwind.a
# and the crtbegin.o/crtend.o rustc asks for, the files rust-std's
# lib/self-contained/ holds for the targets it does ship.
#
# ci/build-agents.sh builds std itself for these targets (cargo
# -Zbuild-std) and points rustc here with `-L native=DIR`: rustc finds the
# crt objects and libraries on that path as it would in self-contained/.
#
# musl is Debian's source (musl_1.2.3, checked against its .dsc's sha256),
# libunwind the copy in the toolchain's rust-src. clang compiles both for
# the target's CPU: that is the point for i586, whose libc must have no
# CMOV and no SSE (rustc's own i686 musl has both), so a Pentium runs it.
# Cached by target and by this script's own hash under $CACHE.
set -euo pipefail
target=${1:?usage: agent-libc.sh TARGET}
CACHE=${BENCHRIG_LIBC_CACHE:-/var/tmp/benchrig-agent-libc}
MUSL_VERSION=1.2.3
MUSL_SHA256=7d5b0b6062521e4627e099e4c9dc8248d32a30285e959b7eecaa780cf8cfd4a4
MUSL_URL=http://deb.debian.org/debian/pool/main/m/musl/musl_$MUSL_VERSION.orig.tar.gz

# clang's target and CPU flags, and musl's architecture, per Rust target.
# These match rustc's own target specs (rustc --print target-spec-json).
case $target in
    i586-unknown-linux-musl)
        cflags=(--target=i586-unknown-linux-musl -march=pentium) musl_arch=i386 ;;
    armv7-unknown-linux-musleabihf)
        cflags=(--target=armv7-unknown-linux-musleabihf -march=armv7-a -mfpu=vfpv3-d16 -mfloat-abi=hard -mthumb)
        musl_arch=arm ;;
    arm-unknown-linux-musleabihf)
        cflags=(--target=arm-unknown-linux-musleabihf -march=armv6 -mfpu=vfp -mfloat-abi=hard -marm) musl_arch=arm ;;
    *) echo "agent-libc.sh: no recipe for $target" >&2; exit 2 ;;
esac

for tool in clang-14 llvm-ar-14 llvm-ranlib-14 curl sha256sum; do
    command -v "$tool" >/dev/null || { echo "agent-libc.sh: $tool is missing (.ci/run installs clang-14, llvm-14 and curl)" >&2; exit 1; }
done
sysroot=$(rustc --print sysroot)
unwind=$sysroot/lib/rustlib/src/rust/src/llvm-project/libunwind
[[ -d $unwind ]] || { echo "agent-libc.sh: no libunwind source in $sysroot: rustup component add rust-src" >&2; exit 1; }

key=$(sha256sum <"$0" | cut -c1-12)
out=$CACHE/$target-$MUSL_VERSION-$key
if [[ -f $out/.done ]]; then
    echo "$out"
    exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/agent-libc.XXXXXX")
trap 'rm -rf "$work"' EXIT
tarball=$CACHE/musl_$MUSL_VERSION.orig.tar.gz
mkdir -p "$CACHE"
if ! echo "$MUSL_SHA256  $tarball" | sha256sum -c --quiet >/dev/null 2>&1; then
    curl -fsS -o "$tarball.part" "$MUSL_URL"
    echo "$MUSL_SHA256  $tarball.part" | sha256sum -c --quiet || { echo "agent-libc.sh: $MUSL_URL is not the expected musl" >&2; exit 1; }
    mv "$tarball.part" "$tarball"
fi
tar -xzf "$tarball" -C "$work"
cc="clang-14 ${cflags[*]} -Os -fPIC"
(
    cd "$work/musl-$MUSL_VERSION"
    ./configure --target="$musl_arch-linux-musl" --prefix="$work/prefix" --disable-shared \
        CC="$cc" AR=llvm-ar-14 RANLIB=llvm-ranlib-14 >"$work/configure.log" 2>&1 \
        || { cat "$work/configure.log" >&2; exit 1; }
    make -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -40 "$work/make.log" >&2; exit 1; }
    make install >/dev/null
)

# LLVM's libunwind, as rust's bootstrap builds it for musl targets.
uw="$cc -nostdinc -isystem $work/prefix/include -isystem $(clang-14 -print-resource-dir)/include -I$unwind/include \
    -funwind-tables -fstrict-aliasing -D_LIBUNWIND_IS_NATIVE_ONLY -D_LIBUNWIND_DISABLE_VISIBILITY_ANNOTATIONS -DNDEBUG"
mkdir "$work/unwind"
for f in UnwindLevel1.c UnwindLevel1-gcc-ext.c Unwind-sjlj.c; do
    $uw -std=c99 -c "$unwind/src/$f" -o "$work/unwind/${f%.c}.o"
done
for f in UnwindRegistersRestore.S UnwindRegistersSave.S; do
    $uw -c "$unwind/src/$f" -o "$work/unwind/${f%.S}.o"
done
for f in libunwind.cpp Unwind-EHABI.cpp; do
    $uw -x c++ -std=c++17 -nostdinc++ -fno-exceptions -fno-rtti -c "$unwind/src/$f" -o "$work/unwind/${f%.cpp}.o"
done
llvm-ar-14 rcs "$work/prefix/lib/libunwind.a" "$work/unwind"/*.o

# rustc links crtbegin.o and crtend.o around every self-contained musl
# program. Their one job in rust-std's copies (compiler-rt's) is to run
# .ctors and register .eh_frame; lld puts constructors in .init_array,
# which musl runs, and libunwind finds .eh_frame through
# PT_GNU_EH_FRAME, so empty objects stand in for them.
clang-14 "${cflags[@]}" -x c -c /dev/null -o "$work/prefix/lib/crtbegin.o"
cp "$work/prefix/lib/crtbegin.o" "$work/prefix/lib/crtend.o"

rm -rf "$out"
mkdir -p "$out"
cp "$work/prefix/lib"/{crt1.o,rcrt1.o,Scrt1.o,crti.o,crtn.o,crtbegin.o,crtend.o,libc.a,libunwind.a} "$out/"
touch "$out/.done"
echo "$out"
