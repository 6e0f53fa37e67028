'use strict'
// Preload of node-redlock's own tests (loaded by AVA before each test file): the tests name
// the hosts of node-redlock's docker-compose setup (`redis-single-instance`,
// `redis-multi-cluster-a-1`, ... on port 6379); run.mjs starts real redis-server processes and
// Redis Clusters on free loopback ports instead and passes `FENCELOCK_REDLOCK_HOSTS`, a JSON
// map from each host name to its port. This hook makes every ioredis client built from such a
// name (a `Redis`, or a `Cluster`'s startup node) point at 127.0.0.1 and that port, so that
// the client's `options` / `startupNodes`, which fencelock/compat/redlock reads, name the real
// server. `127.0.0.1:6379` (the test that expects an unreachable server) maps to the port in
// `FENCELOCK_REDLOCK_CLOSED_PORT`, where nothing listens: no test touches a server on 6379.

const hosts = JSON.parse(process.env.FENCELOCK_REDLOCK_HOSTS || '{}')
const closedPort = Number(process.env.FENCELOCK_REDLOCK_CLOSED_PORT)

/** The real address of a host:port a test names, or null to leave it as it is. */
function mapped(host, port) {
  if (Object.hasOwn(hosts, host)) return { host: '127.0.0.1', port: hosts[host] }
  if ((host === '127.0.0.1' || host === 'localhost') && Number(port || 6379) === 6379) {
    if (!closedPort) throw new Error('hosts.cjs: FENCELOCK_REDLOCK_CLOSED_PORT is not set')
    return { host: '127.0.0.1', port: closedPort }
  }
  return null
}

const { default: Redis } = require('ioredis')
const clusterModule = require('ioredis/built/cluster')
const Cluster = clusterModule.default

// Every client the tests make, to disconnect once they ran: the tests never quit theirs, and an
// open client would keep AVA's worker process alive until AVA's timeout.
const clients = new Set()

const parseOptions = Redis.prototype.parseOptions
Redis.prototype.parseOptions = function parseMappedOptions(...args) {
  parseOptions.apply(this, args)
  const to = mapped(this.options.host, this.options.port)
  if (to) Object.assign(this.options, to)
  clients.add(this)
}

function mapNode(node) {
  const n = typeof node === 'object' && node !== null ? node : null
  const to = n ? mapped(n.host, n.port) : null
  return to ? { ...n, ...to } : node
}

// ioredis's index exports `Cluster` through a getter that reads this module's `default`.
class MappedCluster extends Cluster {
  constructor(startupNodes, options) {
    super(Array.isArray(startupNodes) ? startupNodes.map(mapNode) : startupNodes, options)
    clients.add(this)
  }
}
clusterModule.default = MappedCluster

require('ava').after.always('disconnect the ioredis clients (hosts.cjs)', () => {
  for (const c of clients) c.disconnect()
})
