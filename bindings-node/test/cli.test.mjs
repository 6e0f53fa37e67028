// The `fencelock` command the npm package installs (issue 35 item 7): bin/fencelock.js runs
// the CLI crate inside the native module, so `npm install fencelock` puts it on PATH (`npx
// fencelock`). Its behaviour is tested in depth in cli/tests; here, that the package's bin is
// that program: exit codes, the environment, signals, "not acquired" beside a Node holder.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'

import { startServers, waitUntil } from './redis.mjs'

const require = createRequire(import.meta.url)
const { LockManager } = require('../index.js')
const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'fencelock.js')
const pkg = require('../package.json')

let servers
let dir
before(async () => {
  servers = await startServers(1)
  dir = mkdtempSync(join(tmpdir(), 'fencelock-node-cli-'))
})
after(async () => {
  await Promise.all(servers.map((s) => s.stop()))
  rmSync(dir, { recursive: true, force: true })
})

const cli = (sub, ...args) => [BIN, sub, '--server', servers[0].url, ...args]
const run = (argv) => spawnSync(process.execPath, argv, { encoding: 'utf8', timeout: 60_000 })

describe('the fencelock bin', () => {
  it('is the package bin and knows its version', () => {
    assert.equal(pkg.bin.fencelock, 'bin/fencelock.js')
    const out = run([BIN, '--version'])
    assert.equal(out.status, 0, out.stderr)
    assert.equal(out.stdout.trim(), `fencelock ${pkg.version}`)
    const bad = run([BIN, 'run', 'x'])
    assert.equal(bad.status, 64)
    assert.match(bad.stderr, /COMMAND/)
  })

  it('passes the exit code and the fencing token, and is refused beside a Node holder', async () => {
    const envFile = join(dir, 'env')
    const script = `echo "$FENCELOCK_NAME $FENCELOCK_FENCING_TOKEN" > ${envFile}; exit 42`
    const out = run(cli('run', 'node-cli', '--', 'sh', '-c', script))
    assert.equal(out.status, 42, out.stderr)
    const [name, token] = readFileSync(envFile, 'utf8').trim().split(' ')
    assert.equal(name, 'node-cli')
    assert.ok(Number(token) >= 1)
    assert.equal(run(cli('status', 'node-cli')).status, 1, 'released')
    const m = new LockManager(servers[0].url)
    const held = await m.acquire('node-cli', { ttl: 10_000 })
    const busy = run(cli('run', 'node-cli', '--no-wait', '--', 'true'))
    assert.equal(busy.status, 75, busy.stderr)
    await held.release()
    await m.close()
  })

  it('passes signals to the command', async () => {
    const up = join(dir, 'up')
    const script = `trap 'exit 9' INT; echo up > ${up}; while :; do sleep 0.05; done`
    const child = spawn(process.execPath, cli('run', 'node-sig', '--', 'sh', '-c', script), { stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (d) => { stderr += d })
    const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)))
    await waitUntil(() => existsSync(up), 'the command started', 30_000)
    child.kill('SIGINT')
    assert.equal(await exited, 9, stderr)
  })
})
