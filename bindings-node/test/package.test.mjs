// The packed tarball installed in an empty directory and used from there, with no Rust
// toolchain involved: CommonJS require, ESM import, every example of examples/node/, and
// the TypeScript example (`await using`) compiled with `tsc --strict` and run on this Node.
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

import { RedisServer } from './redis.mjs'

const pkgDir = fileURLToPath(new URL('..', import.meta.url))
const examples = path.join(pkgDir, '..', 'examples', 'node')
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

// The environment without a Rust toolchain: no cargo or rustup directory on the PATH.
const noRust = {
  PATH: process.env.PATH.split(path.delimiter)
    .filter((p) => !/cargo|rustup/.test(p))
    .join(path.delimiter),
  CARGO: '/nonexistent/cargo',
  RUSTC: '/nonexistent/rustc',
}

let server
let tmp
let app
let tarball
before(async () => {
  server = await RedisServer.start()
  tmp = mkdtempSync(path.join(os.tmpdir(), 'fencelock-node-pack-'))
  const packed = execFileSync(npm, ['pack', '--json', '--pack-destination', tmp], { cwd: pkgDir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  const [info] = JSON.parse(packed)
  tarball = { path: path.join(tmp, info.filename), files: info.files.map((f) => f.path) }
  app = path.join(tmp, 'app')
  execFileSync('mkdir', ['-p', app])
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }))
  // The package has no dependencies, so the install needs no registry; and no Rust toolchain
  // is involved: cargo and rustc are off the PATH.
  execFileSync(npm, ['install', '--offline', '--no-audit', '--no-fund', tarball.path], {
    cwd: app,
    stdio: 'pipe',
    env: { ...process.env, ...noRust },
  })
})
after(async () => {
  await server.stop()
  if (tmp) rmSync(tmp, { recursive: true, force: true })
})

function run(file, args, { cwd = app, env = {} } = {}) {
  const r = spawnSync(file, args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, ...noRust, FENCELOCK_URL: server.url, NODE_PATH: path.join(app, 'node_modules'), ...env },
    timeout: 60_000,
  })
  assert.equal(r.status, 0, `${file} ${args.join(' ')} failed:\n${r.stdout}\n${r.stderr}`)
  return r.stdout
}

describe('the npm package', () => {
  it('the tarball holds the compiled addon and the entry points', () => {
    for (const f of ['package.json', 'index.js', 'index.mjs', 'index.d.ts', 'native.js', 'native.d.ts', 'family.js', 'election.js', 'scope.js']) {
      assert.ok(tarball.files.includes(f), `${f} in ${tarball.files}`)
    }
    assert.ok(tarball.files.some((f) => /^fencelock\..+\.node$/.test(f)), `an addon in ${tarball.files}`)
    assert.ok(!tarball.files.some((f) => f.startsWith('src/') || f === 'Cargo.toml'), 'no Rust sources')
  })

  it('installs and loads with require(), with no Rust toolchain on the PATH', () => {
    const which = spawnSync('sh', ['-c', 'command -v cargo rustc'], { env: { ...process.env, ...noRust }, encoding: 'utf8' })
    assert.equal(which.stdout.trim(), '', 'cargo is off the PATH')
    const installed = readdirSync(path.join(app, 'node_modules', 'fencelock'))
    assert.ok(installed.some((f) => f.endsWith('.node')))
    const out = run(process.execPath, ['-e', "const f = require('fencelock'); console.log(typeof f.LockManager, typeof f.LockError, require.resolve('fencelock'))"])
    assert.match(out, /^function function .*app\/node_modules\/fencelock\/index\.js/)
  })

  it('loads with import and locks from the installed copy', () => {
    const script = `
      import { LockManager, LockError } from 'fencelock'
      import fencelock from 'fencelock'
      const m = new LockManager(process.env.FENCELOCK_URL)
      const lock = await m.acquire('from-tarball', { ttl: 5000 })
      console.log(lock.fencingToken > 0n, fencelock.LockManager === LockManager, typeof LockError)
      await lock.release()
      await m.close()
    `
    const out = run(process.execPath, ['--input-type=module', '-e', script])
    assert.equal(out.trim(), 'true true function')
  })

  it('the tarball holds fencelock/compat/redlock, which loads, as the main entry does, without ioredis installed', () => {
    for (const f of ['compat/redlock.js', 'compat/redlock.mjs', 'compat/redlock.d.ts', 'compat/redlock.d.mts', 'compat/ioredis-servers.js']) {
      assert.ok(tarball.files.includes(f), `${f} in ${tarball.files}`)
    }
    assert.ok(!existsSync(path.join(app, 'node_modules', 'ioredis')), 'ioredis is an optional peer dependency: not installed')
    const out = run(process.execPath, ['-e', "const R = require('fencelock/compat/redlock'); const f = require('fencelock'); console.log(typeof R.default, typeof R.ExecutionError, typeof f.LockManager)"])
    assert.equal(out.trim(), 'function function function')
    const esm = run(process.execPath, ['--input-type=module', '-e', "import Redlock, { Lock } from 'fencelock/compat/redlock'; console.log(typeof Redlock, typeof Lock)"])
    assert.equal(esm.trim(), 'function function')
  })

  it('the tarball holds fencelock/compat/redis-semaphore, which loads from both module systems without ioredis installed', () => {
    for (const f of ['compat/redis-semaphore.js', 'compat/redis-semaphore.mjs', 'compat/redis-semaphore.d.ts', 'compat/redis-semaphore.d.mts']) {
      assert.ok(tarball.files.includes(f), `${f} in ${tarball.files}`)
    }
    const out = run(process.execPath, ['-e', "const S = require('fencelock/compat/redis-semaphore'); console.log(typeof S.Mutex, typeof S.RedlockMultiSemaphore, S.defaultTimeoutOptions.lockTimeout)"])
    assert.equal(out.trim(), 'function function 10000')
    const esm = run(process.execPath, ['--input-type=module', '-e', "import { Semaphore, TimeoutError } from 'fencelock/compat/redis-semaphore'; console.log(typeof Semaphore, typeof TimeoutError)"])
    assert.equal(esm.trim(), 'function function')
  })

  it('fencelock/compat/redlock locks from the installed copy, from CommonJS and ES modules, typed by tsc --strict both ways', () => {
    // The app's ioredis, as a user would install it (the package's own copy, linked).
    symlinkSync(path.join(pkgDir, 'node_modules', 'ioredis'), path.join(app, 'node_modules', 'ioredis'))
    const body = `
      const client = new Redis({ host: '127.0.0.1', port: Number(new URL(String(process.env.FENCELOCK_URL)).port) })
      const redlock = new Redlock([client], { retryCount: 0 })
      const lock = await redlock.acquire(['compat:' + KIND], 5000)
      const held = (await client.get('compat:' + KIND)) === lock.value
      const refused = await redlock.acquire(['compat:' + KIND], 5000).then(() => false, (e: unknown) => e instanceof ExecutionError)
      await lock.release()
      await redlock.quit()
      console.log(KIND, held, refused)
    `
    // fencelock/metrics too: its default export (the module) and a named one, typed for import.
    const metrics = `import metrics, { MEASURES, type MetricMeasure } from 'fencelock/metrics'\nconst measures: readonly MetricMeasure[] = metrics.MEASURES\nif (measures !== MEASURES) throw new Error('two MEASURES')\n`
    writeFileSync(path.join(app, 'esm.mts'), `import { Redis } from 'ioredis'\nimport Redlock, { ExecutionError } from 'fencelock/compat/redlock'\n${metrics}const KIND = 'esm'\nconst typed: Redlock | null = null\nvoid typed\n${body}\n`)
    writeFileSync(path.join(app, 'cjs.cts'), `import { Redis } from 'ioredis'\nimport Redlock, { ExecutionError } from 'fencelock/compat/redlock'\nconst KIND = 'cjs'\nasync function main(): Promise<void> {${body}}\nvoid main()\n`)
    writeFileSync(
      path.join(app, 'tsconfig.compat.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          target: 'ES2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          esModuleInterop: true,
          types: ['node'],
          typeRoots: [path.join(pkgDir, 'node_modules', '@types')],
          noEmitOnError: true,
        },
        files: ['esm.mts', 'cjs.cts'],
      }),
    )
    run(process.execPath, [path.join(pkgDir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(app, 'tsconfig.compat.json')])
    assert.equal(run(process.execPath, [path.join(app, 'esm.mjs')]).trim(), 'esm true true')
    assert.equal(run(process.execPath, [path.join(app, 'cjs.cjs')]).trim(), 'cjs true true')
  })

  it('examples/node/basic.js runs', () => {
    const out = run(process.execPath, [path.join(examples, 'basic.js')])
    assert.match(out, /acquired reports:daily, fencing token \d+/)
    assert.match(out, /got it again/)
  })

  it('examples/node/worker-pool.js caps six workers at two at once', () => {
    const out = run(process.execPath, [path.join(examples, 'worker-pool.js')])
    assert.match(out, /6 workers ran, at most 2 at once/)
    assert.match(out, /after: \{"limit":2,"held":0,"holders":0,"waiters":0\}/)
  })

  it('examples/node/long-job.js keeps its lock through a job five times its TTL', () => {
    const out = run(process.execPath, [path.join(examples, 'long-job.js')])
    assert.match(out, /completed 10 steps under the lock/)
  })

  it('examples/node/fencing.js rejects the stale write', () => {
    const out = run(process.execPath, [path.join(examples, 'fencing.js')])
    assert.match(out, /client A's late write: rejected write with fencing token/)
    assert.match(out, /stored value: written by B/)
  })

  it('examples/node/request-id.js hands a lock to a second process by request id', () => {
    const out = run(process.execPath, [path.join(examples, 'request-id.js')])
    assert.match(out, /process 1: tryGetLock\(order:42, request id, 30000\) -> true/)
    assert.match(out, /another request: tryGetLock -> false/)
    assert.match(out, /another request: releaseLock with its own id -> false/)
    assert.match(out, /is it still locked\? true/)
    assert.match(out, /process 2: releaseLock\(order:42, [0-9a-f-]{36}\) -> true/)
    assert.match(out, /after process 2: locked=false/)
    assert.match(out, /process 1 releasing again -> false/)
  })

  it('examples/node/events.js prints the events of its lock', () => {
    const out = run(process.execPath, [path.join(examples, 'events.js')])
    assert.match(out, /servers: 127\.0\.0\.1:\d+/)
    assert.match(out, /\[fencelock debug\] acquired lock="events:demo" attempts=1/)
    assert.match(out, /\[fencelock debug\] extend lock="events:demo"/)
    assert.match(out, /\[fencelock debug\] release lock="events:demo"/)
  })

  it('examples/node/await-using.ts compiles with tsc --strict and runs; the typings reject misuse', () => {
    copyFileSync(path.join(examples, 'await-using.ts'), path.join(app, 'await-using.ts'))
    copyFileSync(path.join(pkgDir, 'test', 'types.ts'), path.join(app, 'types.ts'))
    writeFileSync(
      path.join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          target: 'ES2022',
          module: 'commonjs',
          moduleResolution: 'node10',
          lib: ['es2022', 'esnext.disposable'],
          types: ['node'],
          typeRoots: [path.join(pkgDir, 'node_modules', '@types')],
          noEmitOnError: true,
        },
        files: ['await-using.ts', 'types.ts'],
      }),
    )
    run(process.execPath, [path.join(pkgDir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', app])
    const out = run(process.execPath, [path.join(app, 'await-using.js')])
    assert.match(out, /holding inventory with fencing token \d+/)
    assert.match(out, /released at block end; next token \d+ > \d+/)
  })
})
