// The module under test, named by run.mjs in UNDER_TEST: `redis-semaphore` itself (the
// control) or `fencelock/compat/redis-semaphore` (the drop-in). Every module of this src/
// stands for the redis-semaphore source module of the same path that the tests import, and
// gives them the object of that name from the module under test.
declare const require: (id: string) => any
declare const process: { env: Record<string, string | undefined> }

const id = process.env.UNDER_TEST
if (!id) throw new Error('UNDER_TEST names the module under test')
export default require(id)
