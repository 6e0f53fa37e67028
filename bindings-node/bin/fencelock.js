#!/usr/bin/env node
'use strict'
// The `fencelock` command (docs/cli.md), on PATH after `npm install fencelock` (`npx
// fencelock`): the same program as the Rust binary, run inside the native module. It blocks
// this process's JavaScript thread until the command ends, and exits with its code.

require('../index.js') // a platform without the native module gets its error, naming the package
const native = require('../native.js')

process.exitCode = native.__cliMain(['fencelock', ...process.argv.slice(2)])
