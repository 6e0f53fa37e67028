#!/usr/bin/env bash
# Java (bindings-java, issue 39): the binding over libfencelock through JNA, built with the
# JDK and jars Debian ships (installed when missing) and tested with JUnit 5 against real
# redis-servers: the API, bad input, interruption, the lost listener, threads, Redlock with a
# server down, the garbage collector's drop rule, and the seed write-ups' Jedis examples
# (examples/java/RequestId.java run in two JVMs). Reuses the debug libfencelock of stage 40.
set -euo pipefail
cd "$FENCELOCK_ROOT"
bindings-java/test.sh
