'use strict'
// Lays out the npm packages of a release (napi-rs layout), for ci/release.sh to `npm pack`:
//   OUT/fencelock/                  the main package: JavaScript, typings, and
//                                   optionalDependencies on every platform package of
//                                   package.json napi.targets (npm installs the one that
//                                   matches os/cpu/libc)
//   OUT/fencelock-linux-x64-gnu/    the addon built here (ADDON: the cdylib built by cargo)
// Usage: node ci/npm-packages.js OUT ADDON
const fs = require('node:fs')
const path = require('node:path')

const [out, addon] = process.argv.slice(2)
if (!out || !addon) {
  console.error('usage: node ci/npm-packages.js OUT_DIR ADDON.so')
  process.exit(2)
}
const src = path.join(__dirname, '..', 'bindings-node')
const pkg = JSON.parse(fs.readFileSync(path.join(src, 'package.json'), 'utf8'))
const { platformOf } = require(path.join(src, 'platforms.js'))
const platforms = pkg.napi.targets.map(platformOf)

// The main package: no addon inside; the platform packages carry them.
const main = path.join(out, pkg.name)
fs.mkdirSync(main, { recursive: true })
const files = pkg.files.filter((f) => f !== '*.node')
// Directories (compat/, the drop-ins' subpath) are copied whole.
for (const f of files) fs.cpSync(path.join(src, f), path.join(main, f), { recursive: true })
const published = { ...pkg }
delete published.devDependencies
delete published.scripts
published.files = files
published.optionalDependencies = Object.fromEntries(platforms.map((p) => [`${pkg.name}-${p}`, pkg.version]))
fs.writeFileSync(path.join(main, 'package.json'), JSON.stringify(published, null, 2) + '\n')

// The platform package of the addon built here: linux-x64-gnu.
const here = 'linux-x64-gnu'
const [os, cpu, libc] = here.split('-')
const dir = path.join(out, `${pkg.name}-${here}`)
fs.mkdirSync(dir, { recursive: true })
const binary = `${pkg.napi.binaryName}.${here}.node`
fs.copyFileSync(addon, path.join(dir, binary))
fs.writeFileSync(
  path.join(dir, 'package.json'),
  JSON.stringify(
    {
      name: `${pkg.name}-${here}`,
      version: pkg.version,
      description: `The ${here} native module of fencelock (glibc 2.17 or newer); installed by \`npm install fencelock\`.`,
      license: pkg.license,
      repository: pkg.repository,
      os: [os],
      cpu: [cpu],
      libc: [libc === 'gnu' ? 'glibc' : libc],
      main: binary,
      files: [binary, 'README.md'],
      engines: pkg.engines,
    },
    null,
    2,
  ) + '\n',
)
fs.writeFileSync(
  path.join(dir, 'README.md'),
  `# ${pkg.name}-${here}\n\nThe ${here} native module of [fencelock](https://www.npmjs.com/package/fencelock). ` +
    'Install `fencelock`, which depends on this package on this platform.\n',
)
console.log(`npm packages in ${out}: ${pkg.name} (optional: ${Object.keys(published.optionalDependencies).join(', ')}), ${pkg.name}-${here}`)
