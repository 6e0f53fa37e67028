#!/usr/bin/env bash
# Builds libfencelock's static library and puts it, with its header, where this package's
# #cgo directives read them: lib/linux_amd64/libfencelock.a and include/fencelock.h. After it,
# `go test` here works, and so does any module that requires this one through a `replace`
# directive. PROFILE=release for an optimized library (ci/release.sh's); debug by default.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
profile="${PROFILE:-debug}"
# The host named as the target, as ci/test.sh does: the build is shared with the other faces.
CARGO_BUILD_TARGET="${CARGO_BUILD_TARGET:-$(rustc -vV | sed -n 's/^host: //p')}"
export CARGO_BUILD_TARGET
flags=(--locked -p fencelock-c)
[ "$profile" = release ] && flags+=(--release)
(cd "$root" && cargo build "${flags[@]}")
out="$("$root/ci/out-dir.sh" "$profile")"
mkdir -p "$here/lib/linux_amd64" "$here/include"
cp -f "$out/libfencelock_c.a" "$here/lib/linux_amd64/libfencelock.a"
cp -f "$root/bindings-c/include/fencelock.h" "$here/include/fencelock.h"
echo "bindings-go/build.sh: libfencelock ($profile) in $here/lib/linux_amd64"
