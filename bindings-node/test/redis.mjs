// Test fixture: throwaway redis-server processes on free loopback ports (never 6379), each
// stopped by its own PID. The twin of the Rust crate tests/harness (fencelock-testkit).
import { execFileSync, spawn } from 'node:child_process'
import { after, before } from 'node:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import Redis from 'ioredis'

const REDIS_SERVER = process.env.REDIS_SERVER || '/usr/bin/redis-server'
const live = new Set()

// Safety net: whatever a failing test leaves behind dies with the runner.
process.on('exit', () => {
  for (const s of live) s.proc.kill('SIGKILL')
})

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => (port === 6379 ? freePort().then(resolve, reject) : resolve(port)))
    })
  })
}

function ping(port) {
  return new Promise((resolve) => {
    const sock = net.connect({ port, host: '127.0.0.1' })
    let data = ''
    sock.setTimeout(500, () => sock.destroy())
    sock.on('connect', () => sock.write('PING\r\n'))
    sock.on('data', (d) => {
      data += d
      if (data.includes('\r\n')) {
        sock.destroy()
        resolve(data.startsWith('+PONG'))
      }
    })
    sock.on('error', () => resolve(false))
    sock.on('close', () => resolve(false))
  })
}

export class RedisServer {
  constructor(port, dir, extra = [], tlsPort = null) {
    this.port = port
    this.dir = dir
    this.extra = extra
    this.tlsPort = tlsPort
    this.log = ''
    this.proc = null
    this.clients = []
  }

  /**
   * Starts a server. `args`: extra redis-server arguments. `tls`: `{ certs, clientAuth }` (a
   * directory made by `makeCerts`) adds a TLS port (`tlsPort`, `tlsUrl`) next to the plain one.
   */
  static async start({ args = [], tls = null } = {}) {
    let lastError
    for (let attempt = 0; attempt < 5; attempt++) {
      const port = await freePort()
      const dir = mkdtempSync(path.join(os.tmpdir(), 'fencelock-node-redis-'))
      let extra = args
      let tlsPort = null
      if (tls) {
        tlsPort = await freePort()
        const f = (name) => path.join(tls.certs, name)
        extra = [
          ...args,
          '--tls-port', String(tlsPort),
          '--tls-cert-file', f('server.crt'),
          '--tls-key-file', f('server.key'),
          '--tls-ca-cert-file', f('ca.crt'),
          '--tls-auth-clients', tls.clientAuth ? 'yes' : 'no',
        ]
      }
      const server = new RedisServer(port, dir, extra, tlsPort)
      try {
        await server.#spawn()
        return server
      } catch (e) {
        lastError = e
        server.kill()
        rmSync(dir, { recursive: true, force: true })
      }
    }
    throw lastError
  }

  async #spawn() {
    const proc = spawn(
      REDIS_SERVER,
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, ...this.extra],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    this.proc = proc
    this.exited = new Promise((resolve) => proc.once('exit', resolve))
    live.add(this)
    proc.stdout.on('data', (d) => (this.log += d))
    proc.stderr.on('data', (d) => (this.log += d))
    const deadline = Date.now() + 5000
    while (Date.now() < deadline) {
      if (proc.exitCode !== null) break
      if (await ping(this.port)) return
      await new Promise((r) => setTimeout(r, 20))
    }
    throw new Error(`redis-server on port ${this.port} did not answer PING:\n${this.log}`)
  }

  get url() {
    return `redis://127.0.0.1:${this.port}`
  }

  get tlsUrl() {
    return `rediss://127.0.0.1:${this.tlsPort}`
  }

  /** An ioredis client to this server (closed by `kill`). */
  client() {
    const c = new Redis({ port: this.port, host: '127.0.0.1', maxRetriesPerRequest: 1, lazyConnect: false })
    c.on('error', () => {})
    this.clients.push(c)
    return c
  }

  async get(key) {
    this.cli ??= this.client()
    return this.cli.get(key)
  }

  async del(key) {
    this.cli ??= this.client()
    return this.cli.del(key)
  }

  async pttl(key) {
    this.cli ??= this.client()
    return this.cli.pttl(key)
  }

  /**
   * How many waiters hold a place in the wait queue of lock `name` (found by the layout's
   * pattern `fencelock:{SLOT-TAG}:queue:NAME`, see docs/SAFETY.md).
   */
  async queued(name) {
    this.cli ??= this.client()
    const escaped = name.replace(/[*?[\]\\]/g, '\\$&')
    const keys = await this.cli.keys(`fencelock:{*}:queue:${escaped}`)
    let n = 0
    for (const key of keys) n += await this.cli.zcard(key)
    return n
  }

  /**
   * Whether a waiter for lock `name` listens on this server: a subscriber on one of its
   * wake-up channels (`fencelock:{SLOT-TAG}:released:NAME|WAKE-ID`). A waiter takes its
   * place at its first refusal and subscribes after it: until then a newcomer may pass it.
   */
  async listening(name) {
    this.cli ??= this.client()
    const escaped = name.replace(/[*?[\]\\]/g, '\\$&')
    const channels = await this.cli.pubsub('CHANNELS', `fencelock:{*}:released:${escaped}|*`)
    return channels.length > 0
  }

  /** SIGSTOP by PID: the server hangs (connections stay open, nothing is answered). */
  pause() {
    this.proc.kill('SIGSTOP')
  }

  /** SIGCONT by PID. */
  resume() {
    this.proc.kill('SIGCONT')
  }

  /** SIGKILL by PID, then wait for the exit. */
  async kill() {
    for (const c of this.clients) c.disconnect()
    this.clients = []
    this.cli = undefined
    if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill('SIGKILL')
      await this.exited
    }
    live.delete(this)
  }

  /**
   * After `kill`: a new redis-server on the same port (empty: nothing is saved). Nothing while
   * this one runs (a second one could not bind the port, and would be taken for it).
   */
  async restart() {
    if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null) return
    await this.#spawn()
  }

  async stop() {
    await this.kill()
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/**
 * A CA, a server certificate for 127.0.0.1 and a client certificate signed by it, and a
 * second CA that signed nothing, made in `dir` with the openssl command (as core/tests/tls.rs).
 */
export function makeCerts(dir) {
  const ssl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  ssl('req', '-x509', '-days', '2', '-subj', '/CN=fencelock node test CA', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt')
  ssl('req', '-x509', '-days', '2', '-subj', '/CN=fencelock other CA', ...ec, '-keyout', 'other-ca.key', '-out', 'other-ca.crt')
  const exts = {
    server: 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
    client: 'extendedKeyUsage=clientAuth\n',
  }
  for (const [name, ext] of Object.entries(exts)) {
    writeFileSync(path.join(dir, `${name}.ext`), ext)
    ssl('req', '-new', '-subj', `/CN=fencelock node test ${name}`, ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`)
    ssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-out', `${name}.crt`, '-extfile', `${name}.ext`)
  }
  return dir
}

/** Starts `n` servers in parallel. */
export async function startServers(n) {
  return Promise.all(Array.from({ length: n }, () => RedisServer.start()))
}

/**
 * Waits until `cond()` (sync or async) is truthy, checking every 10 ms; rejects naming `what`
 * after `ms`: the wait for the thing a test needs, never a fixed sleep that stands for "by
 * now it has happened". The limit catches a hang; make it generous.
 */
export async function waitUntil(cond, what, ms = 5000) {
  const t0 = Date.now()
  for (;;) {
    const value = await cond()
    if (value) return value
    if (Date.now() - t0 > ms) throw new Error(`after ${ms} ms, still not: ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

/**
 * Registers the hooks of a test file that uses one server and one manager on it: started
 * before the file's tests (`ready(server, manager)` receives them), closed and stopped after.
 */
export function serverWithManager(LockManager, ready) {
  let server
  let manager
  before(async () => {
    server = await RedisServer.start()
    manager = new LockManager(server.url)
    ready(server, manager)
  })
  after(async () => {
    await manager.close()
    await server.stop()
  })
}

/** One `redis-server --sentinel` watching `mymaster`, stopped by its PID. */
export class Sentinel {
  static async start(masterPort) {
    const s = new Sentinel()
    s.port = await freePort()
    s.dir = mkdtempSync(path.join(os.tmpdir(), 'fencelock-node-sentinel-'))
    const conf = path.join(s.dir, 'sentinel.conf')
    writeFileSync(conf, [
      `port ${s.port}`, 'bind 127.0.0.1', `dir ${s.dir}`, `logfile ${path.join(s.dir, 'sentinel.log')}`,
      `sentinel monitor mymaster 127.0.0.1 ${masterPort} 2`,
      'sentinel down-after-milliseconds mymaster 1000',
      'sentinel failover-timeout mymaster 3000',
      'sentinel parallel-syncs mymaster 1',
    ].join('\n') + '\n')
    s.proc = spawn(REDIS_SERVER, [conf, '--sentinel'], { stdio: 'ignore' })
    s.exited = new Promise((resolve) => s.proc.once('exit', resolve))
    s.client = new Redis({ port: s.port, host: '127.0.0.1', maxRetriesPerRequest: 1, lazyConnect: true })
    s.client.on('error', () => {})
    await waitUntil(async () => (await s.masterPort()) !== null, 'the sentinel answers')
    return s
  }

  async masterPort() {
    try {
      const addr = await this.client.call('SENTINEL', 'get-master-addr-by-name', 'mymaster')
      return addr ? Number(addr[1]) : null
    } catch {
      return null
    }
  }

  async stop() {
    this.client.disconnect()
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill('SIGKILL')
      await this.exited
    }
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** A master, its replica (in sync) and three sentinels watching it as `mymaster`. */
export async function startSentinelSetup() {
  const master = await RedisServer.start()
  const replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(master.port)] })
  const info = async (server, needle) => (await server.client().info('replication')).includes(needle)
  await waitUntil(() => info(replica, 'master_link_status:up'), 'the replica is in sync', 10_000)
  const sentinels = []
  for (let i = 0; i < 3; i++) sentinels.push(await Sentinel.start(master.port))
  return {
    master,
    replica,
    sentinels,
    url: `redis+sentinel://${sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}/mymaster`,
    /** Forces a failover; resolves once the replica is the master everywhere. */
    async failover() {
      await waitUntil(async () => {
        try {
          await sentinels[0].client.call('SENTINEL', 'FAILOVER', 'mymaster')
          return true
        } catch {
          return false
        }
      }, 'the sentinel accepts FAILOVER', 20_000)
      await waitUntil(async () => {
        const named = await Promise.all(sentinels.map((s) => s.masterPort()))
        return named.every((p) => p === replica.port) && (await info(replica, 'role:master')) && (await info(master, 'role:slave'))
      }, 'the replica is promoted', 20_000)
    },
    async stop() {
      for (const s of sentinels) await s.stop()
      await replica.stop()
      await master.stop()
    },
  }
}

/**
 * A Redis Cluster of 3 masters and (by default) 3 replicas on free loopback ports (the twin of
 * the Rust harness's `RedisCluster`): `redis-server --cluster-enabled yes` each, joined by
 * `redis-cli --cluster create --cluster-replicas N`; every node stopped by its PID.
 */
export async function startCluster({ replicas = 1 } = {}) {
  const args = ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '1000']
  const nodes = []
  try {
    // Each node's cluster bus on a free port of its own (by default the node's port + 10000,
    // which may be taken, or past 65535).
    for (let i = 0; i < 3 * (1 + replicas); i++) nodes.push(await RedisServer.start({ args: [...args, '--cluster-port', String(await freePort())] }))
    execFileSync('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'], { stdio: 'ignore' })
    await waitUntil(async () => {
      for (const n of nodes) {
        const c = n.client()
        const info = await c.call('CLUSTER', 'INFO')
        const repl = await c.info('replication')
        if (!String(info).includes('cluster_state:ok')) return false
        if (repl.includes('role:slave') && !repl.includes('master_link_status:up')) return false
      }
      return true
    }, 'every node of the cluster is ok and in sync', 30_000)
  } catch (e) {
    for (const n of nodes) await n.stop()
    throw e
  }
  let cli
  return {
    nodes,
    url: `redis+cluster://127.0.0.1:${nodes[0].port},127.0.0.1:${nodes[1].port}`,
    /** An ioredis Cluster client (routes each key to its master). */
    client() {
      cli ??= new Redis.Cluster([{ host: '127.0.0.1', port: nodes[0].port }])
      cli.on('error', () => {})
      return cli
    },
    /** Places in the wait queue of `name` (`fencelock:{SLOT-TAG}:queue:NAME`). */
    async queued(name) {
      let total = 0
      for (const n of nodes) {
        const c = n.client()
        if (!(await c.info('replication')).includes('role:master')) continue
        for (const key of await c.keys(`fencelock:{*}:queue:${name}`)) total += await c.zcard(key)
      }
      return total
    },
    async stop() {
      if (cli) cli.disconnect()
      for (const n of nodes) await n.stop()
    },
  }
}
