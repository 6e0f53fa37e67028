'use strict'
// Where an ioredis client points, as a fencelock server URL: fencelock/compat/redlock reads the
// options of the clients it is given (it sends nothing through them) and hands the URLs to a
// LockManager (so does fencelock/compat/redis-semaphore), which opens connections of its own. No password ever leaves this module except
// inside the URL given to the manager: the labels used in messages are host:port.
//
// ioredis is not loaded here: a Cluster is recognised by its `isCluster` flag.

const { mkdtempSync, rmSync, writeFileSync } = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const { LockManager } = require('../index.js')

/** The options of ioredis that change which server a client reaches and that fencelock cannot follow. */
const UNSUPPORTED = {
  natMap: 'a Cluster whose nodes announce addresses the client maps elsewhere (natMap)',
}

function enc(s) {
  return encodeURIComponent(String(s))
}

function hostPort(host, port) {
  const h = String(host)
  return `${h.includes(':') && !h.startsWith('[') ? `[${h}]` : h}:${port}`
}

/** `user:password@` (each part percent-encoded) when a password is set; ioredis sends no AUTH without one. */
function userinfo(o) {
  if (o.password === undefined || o.password === null || o.password === '') return ''
  return `${o.username ? enc(o.username) : ''}:${enc(o.password)}@`
}

/** The TLS settings of an ioredis `tls` option, as fencelock's manager options need them. */
function tlsOf(tls) {
  if (!tls) return null
  const t = typeof tls === 'object' ? tls : {}
  const pem = (v) => (v === undefined || v === null ? null : (Array.isArray(v) ? v : [v]).map(String).join('\n'))
  return { ca: pem(t.ca), cert: pem(t.cert), key: pem(t.key), insecure: t.rejectUnauthorized === false }
}

function nodeOf(node) {
  if (typeof node === 'number') return { host: '127.0.0.1', port: node }
  if (typeof node === 'string') {
    const u = new URL(node.includes('://') ? node : `redis://${node}`)
    return { host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port) || 6379 }
  }
  return { host: node.host || '127.0.0.1', port: Number(node.port) || 6379 }
}

/**
 * What one ioredis client (a `Redis` or a `Cluster`) reaches: `{ url, where, tls, keyPrefix }`.
 * `url` is the fencelock server URL (it holds the password, if any: give it only to a
 * LockManager); `where` names the server in messages (host:port, never a credential); `tls` is
 * null or `{ ca, cert, key, insecure }` (PEM text); `keyPrefix` is the client's key prefix.
 * Throws a TypeError (naming the server, never a password) for what fencelock cannot follow.
 */
function serverOf(client, what = 'Redlock') {
  if (client === null || typeof client !== 'object' || typeof client.options !== 'object' || client.options === null) {
    throw new TypeError(`${what} needs ioredis clients (Redis or Cluster instances)`)
  }
  const o = client.options
  if (client.isCluster === true) {
    const nodes = (client.startupNodes || []).map(nodeOf)
    const where = `cluster ${nodes.map((n) => hostPort(n.host, n.port)).join(',')}`
    for (const [option, unsupported] of Object.entries(UNSUPPORTED)) {
      if (o[option]) throw new TypeError(`${what} over ${where}: fencelock does not support ${unsupported}`)
    }
    if (nodes.length === 0) throw new TypeError(`${what}: an ioredis Cluster without startup nodes`)
    const r = o.redisOptions || {}
    const tls = tlsOf(r.tls ?? o.tls)
    const scheme = tls ? 'rediss+cluster' : 'redis+cluster'
    return {
      url: `${scheme}://${userinfo(r)}${nodes.map((n) => hostPort(n.host, n.port)).join(',')}`,
      where,
      tls,
      keyPrefix: o.keyPrefix || r.keyPrefix || '',
    }
  }
  const tls = tlsOf(o.tls)
  const db = Number(o.db) || 0
  if (Array.isArray(o.sentinels) && o.sentinels.length > 0) {
    const sentinels = o.sentinels.map((s) => hostPort(s.host || '127.0.0.1', Number(s.port) || 26379))
    const where = `sentinels ${sentinels.join(',')} (${o.name})`
    if (!o.name) throw new TypeError(`${what} over ${where}: a Sentinel client needs the master's name`)
    const query = []
    if (o.sentinelUsername) query.push(`sentinel_user=${enc(o.sentinelUsername)}`)
    if (o.sentinelPassword) query.push(`sentinel_password=${enc(o.sentinelPassword)}`)
    const scheme = tls && o.enableTLSForSentinelMode ? 'rediss+sentinel' : 'redis+sentinel'
    const url = `${scheme}://${userinfo(o)}${sentinels.join(',')}/${enc(o.name)}${db ? `/${db}` : ''}${query.length ? `?${query.join('&')}` : ''}`
    return { url, where, tls: scheme === 'rediss+sentinel' ? tls : null, keyPrefix: o.keyPrefix || '' }
  }
  if (o.path) {
    const query = [`db=${db}`]
    if (o.password) {
      if (o.username) query.push(`user=${enc(o.username)}`)
      query.push(`pass=${enc(o.password)}`)
    }
    return { url: `redis+unix://${o.path}?${query.join('&')}`, where: String(o.path), tls: null, keyPrefix: o.keyPrefix || '' }
  }
  const where = hostPort(o.host || 'localhost', o.port || 6379) + (db ? `/${db}` : '')
  const url = `${tls ? 'rediss' : 'redis'}://${userinfo(o)}${hostPort(o.host || 'localhost', o.port || 6379)}${db ? `/${db}` : ''}`
  return { url, where, tls, keyPrefix: o.keyPrefix || '' }
}

/**
 * The servers of a set of clients: `{ urls, where, keyPrefix, tls }`. The clients must agree on
 * the key prefix and, among those using TLS, on the TLS settings (a LockManager has one of each).
 */
function serversOf(clients, what = 'Redlock') {
  const servers = clients.map((c) => serverOf(c, what))
  const prefixes = new Set(servers.map((s) => s.keyPrefix))
  if (prefixes.size > 1) {
    throw new TypeError(`${what}: the clients have different keyPrefix options (${servers.map((s) => `${s.where}: ${JSON.stringify(s.keyPrefix)}`).join(', ')}); fencelock uses one prefix per lock`)
  }
  const tlsKinds = new Map()
  for (const s of servers) if (s.tls) tlsKinds.set(JSON.stringify(s.tls), s)
  if (tlsKinds.size > 1) {
    throw new TypeError(`${what}: the TLS clients have different TLS settings (${[...tlsKinds.values()].map((s) => s.where).join(', ')}); fencelock uses one set of TLS settings per lock manager`)
  }
  return {
    urls: servers.map((s) => s.url),
    where: servers.map((s) => s.where),
    keyPrefix: servers[0].keyPrefix,
    tls: tlsKinds.size ? [...tlsKinds.values()][0].tls : null,
  }
}

/**
 * A LockManager over `servers` (from serversOf) with `settings` (more manager options).
 * fencelock's TLS options are file paths; ioredis's are PEM text: written to a private
 * directory for the manager to load, then removed.
 */
function newManager(servers, settings = {}) {
  const options = { keyPrefix: servers.keyPrefix, ...settings }
  const tls = servers.tls
  if (!tls) return new LockManager(servers.urls, options)
  if (tls.insecure) options.tlsInsecure = true
  const dir = tls.ca || tls.cert || tls.key ? mkdtempSync(path.join(os.tmpdir(), 'fencelock-redlock-tls-')) : null
  try {
    for (const [field, option] of [['ca', 'tlsCaFile'], ['cert', 'tlsClientCert'], ['key', 'tlsClientKey']]) {
      if (tls[field] === null) continue
      const file = path.join(dir, `${field}.pem`)
      writeFileSync(file, tls[field], { mode: 0o600 })
      options[option] = file
    }
    return new LockManager(servers.urls, options)
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true })
  }
}

module.exports = { newManager, serverOf, serversOf }
