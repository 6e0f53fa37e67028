'use strict'
// The platforms fencelock's npm packages are built for, and which one this process runs on:
// shared by the loader's error (index.js) and the release script (ci/npm-packages.js). The
// names follow napi-rs: the addon of PLATFORM is `fencelock.PLATFORM.node`, in the package
// `fencelock-PLATFORM`, an optional dependency of `fencelock`.

const { readFileSync } = require('node:fs')

/** Rust target triple (package.json napi.targets) -> napi-rs platform name. */
function platformOf(triple) {
  const [arch, vendor, os, abi] = triple.split('-')
  const nodeArch = { x86_64: 'x64', aarch64: 'arm64', i686: 'ia32', armv7: 'arm' }[arch] ?? arch
  if (vendor === 'apple') return `darwin-${nodeArch}`
  if (os === 'windows') return `win32-${nodeArch}-${abi}`
  return `${os}-${nodeArch}${abi ? `-${abi}` : ''}`
}

/** The napi-rs platform name of this process: `linux-x64-gnu`, `darwin-arm64`, ... */
function currentPlatform() {
  const { platform, arch } = process
  if (platform === 'linux') return `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`
  if (platform === 'win32') return `win32-${arch}-msvc`
  return `${platform}-${arch}`
}

function isMusl() {
  try {
    const report = process.report && process.report.getReport()
    if (report && report.header && report.header.glibcVersionRuntime) return false
  } catch {}
  try {
    return readFileSync('/usr/bin/ldd', 'utf8').includes('musl')
  } catch {
    return false
  }
}

/** The platform names fencelock is published for (package.json napi.targets). */
function publishedPlatforms() {
  return require('./package.json').napi.targets.map(platformOf)
}

module.exports = { platformOf, currentPlatform, publishedPlatforms }
