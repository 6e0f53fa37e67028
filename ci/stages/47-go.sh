#!/usr/bin/env bash
# Go (bindings-go, issue 52): the cgo binding over libfencelock's static library, built by
# bindings-go/build.sh on the shared debug build of stage 40; go vet, then go test -race
# against real redis-servers it starts on free ports: acquire, extend, release, typed
# errors, bad input before any network call, a cancelled context giving its place up, 2,000
# waiting goroutines under 100 OS threads, WithLock cancelled on a loss, semaphores and
# read-write locks, inspection, slog events, OpenTelemetry spans, redsync's own tests against
# the redsync drop-in, and the seed write-up's Go lock
# (examples/go/requestid) in three processes at once, beside its naive release failing.
set -euo pipefail
cd "$FENCELOCK_ROOT"
# A machine without Go gets Debian's (the module needs Go 1.22 or later).
command -v go >/dev/null 2>&1 || ci/apt-install.sh golang-go
command -v gcc >/dev/null 2>&1 || ci/apt-install.sh gcc
go version
bindings-go/build.sh
cd bindings-go
test -z "$(gofmt -l . ../examples/go)" || { echo "gofmt would change:"; gofmt -l . ../examples/go; exit 1; }
go vet ./...
(cd ../examples/go && go vet ./...)
# The Prometheus collector, a module of its own (client_golang from the module proxy).
(cd prometheus && go vet ./... && CGO_ENABLED=1 go test -race -count=1 ./...)
# OpenTelemetry spans, a module of its own (the otel SDK's in-memory exporter reads them).
(cd otel && go vet ./... && CGO_ENABLED=1 go test -race -count=1 ./...)
# The redsync drop-in, a module of its own (redsync's adapters, go-redis v9 and redigo from
# the module proxy): a mutex through either adapter on three servers.
(cd compat/redsync && go vet ./... && CGO_ENABLED=1 go test -race -count=1 ./...)
# redsync's own tests (4.18.1 from the module proxy) against the drop-in, beside the
# unmodified library as a control: six client libraries on 48 tempredis servers.
compat/redsync/suite/run.sh "$FENCELOCK_ROOT/target/redsync-suite"
CGO_ENABLED=1 go test -race -count=1 ./...
# Without cgo (or on another platform) the build fails saying what it needs, not with a
# linker's dump.
if out=$(CGO_ENABLED=0 go build ./... 2>&1); then
  echo "CGO_ENABLED=0 built: it must fail saying cgo is needed" >&2
  exit 1
fi
case "$out" in
  *fencelock_needs_CGO_ENABLED_1_on_linux_amd64*) echo "CGO_ENABLED=0: refused as it should be" ;;
  *) echo "CGO_ENABLED=0 failed without saying why: $out" >&2; exit 1 ;;
esac
