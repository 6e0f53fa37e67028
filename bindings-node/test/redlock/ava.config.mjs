// AVA's configuration for node-redlock's own tests, compiled by run.mjs into .build/ (paths
// are relative to bindings-node, AVA's project directory): the preload that maps
// node-redlock's docker host names to the servers run.mjs started, and one child process per
// file rather than a worker thread.
export default {
  files: ['test/redlock/.build/*.test.js'],
  require: ['./test/redlock/hosts.cjs'],
  workerThreads: false,
  timeout: '60s',
}
