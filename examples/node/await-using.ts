// `await using`: the lock is released when the block ends, however it ends.
// Node 20 has Symbol.asyncDispose but not the syntax: compile with TypeScript
// (target ES2022, lib esnext.disposable), then run the output.
//   tsc --strict --target ES2022 --module commonjs --lib es2022,esnext.disposable await-using.ts
//   FENCELOCK_URL=redis://127.0.0.1:6379 node await-using.js
import { LockManager, Lock, LockError } from 'fencelock'

async function critical(manager: LockManager): Promise<bigint> {
  await using lock: Lock = await manager.acquire('inventory', { ttl: 5_000 })
  console.log(`holding ${lock.name} with fencing token ${lock.fencingToken}`)
  return lock.fencingToken
} // released here

async function main(): Promise<void> {
  await using manager = new LockManager(process.env.FENCELOCK_URL ?? 'redis://127.0.0.1:6379')
  const first = await critical(manager)
  // Free again: the block released it, so this one attempt succeeds.
  const again = await manager.tryAcquire('inventory')
  if (again === null) throw new Error('the lock was not released at the end of the block')
  console.log(`released at block end; next token ${again.fencingToken} > ${first}`)
  await again.release()
}

main().catch((err: unknown) => {
  console.error(err instanceof LockError ? `${err.code}: ${err.message}` : err)
  process.exitCode = 1
})
