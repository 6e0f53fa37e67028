// Type-level test of the published typings (compiled with tsc --strict by package.test.mjs
// against the installed tarball; never run). Every `@ts-expect-error` must be an error.
import {
  AbortError,
  AcquireOptions,
  InvalidArgumentError,
  Lock,
  LockError,
  LockErrorCode,
  LockLostError,
  LockManager,
  NotAcquiredError,
  onEvent,
  FencelockEvent,
  EventLevel,
  Holder,
  LockManagerOptions,
  RwLock,
  Semaphore,
  SemaphoreState,
  WrongKindError,
  Election,
  Term,
  Leader,
} from 'fencelock'

export async function typed(m: LockManager): Promise<void> {
  const election: Election = m.election('scheduler')
  const term: Term = await election.campaign({ value: 'host-a', ttl: 1000, signal: AbortSignal.timeout(10) })
  const number: bigint = term.fencingToken
  await term.proclaim('host-b')
  const now: Leader | null = await election.leader()
  for await (const leader of election.observe({ signal: AbortSignal.timeout(10) })) {
    const value: string | undefined = leader?.value
    const since: Date | undefined = leader?.since
    void [value, since]
  }
  await election.onLeader((leader: Leader | null) => void leader?.value, { signal: AbortSignal.timeout(10) })
  const ran: string = await election.run({ value: 'x' }, async (t, signal) => `${t.value}${signal.aborted}`)
  const maybeTerm: Term | null = await election.tryCampaign({ value: 'y' })
  // @ts-expect-error a value is a string
  await election.campaign({ value: 42 })
  void [number, now, ran, maybeTerm]
  await term[Symbol.asyncDispose]()
  const sem: Semaphore = m.semaphore('jobs', 4)
  const lease: Lock = await sem.acquire({ count: 2, ttl: 1000, wait: 0, signal: AbortSignal.timeout(10) })
  const kind: 'lock' | 'semaphore' | 'read' | 'write' = lease.kind
  const permits: number | null = lease.permits
  const maybeLease: Lock | null = await sem.tryAcquire({ count: 1 })
  const st: SemaphoreState = await sem.state()
  const used: number = await sem.using({ count: 1 }, async (l) => Number(l.fencingToken))
  const rw: RwLock = m.rwlock('doc')
  const r: string = await rw.reading(async (share) => share.kind)
  const w: boolean = await rw.writing({ ttl: 1000 }, async () => (await rw.state()).writer)
  const wrongKind: 'ERR_WRONG_KIND' = WrongKindError.code
  void [kind, permits, maybeLease, st.held, used, r, w, wrongKind]
  const labelled = new LockManager('redis://127.0.0.1:6379', { holder: true })
  const named = new LockManager('redis://127.0.0.1:6379', { holder: 'web-1' })
  const who: Holder | null = await m.holder('name')
  const since: Date | null | undefined = who?.since
  const holderFence: bigint | null | undefined = who?.fencingToken
  const leaseHolders: Holder[] = await sem.holders()
  const rwHolders: Holder[] = await rw.holders()
  void [labelled, named, since, holderFence, who?.remaining, who?.label, leaseHolders, rwHolders]
  // @ts-expect-error holder is true or a label
  void new LockManager('redis://127.0.0.1:6379', { holder: 42 })
  // @ts-expect-error count is a number
  await sem.acquire({ count: '2' })
  // @ts-expect-error a read-write lock has no count
  await rw.read({ count: 2 })
  const lock: Lock = await m.acquire('name', { ttl: 1000, wait: 0, token: Buffer.from('t'), autoExtend: true, maxHold: 5000, signal: AbortSignal.timeout(10) })
  const name: string = lock.name
  const token: string = lock.token
  const fence: bigint = lock.fencingToken
  const validity: number = lock.validity
  const lost: boolean = lock.lost
  const signal: AbortSignal = lock.signal
  const why: 'expired' | 'taken' | 'unreachable' | null = lock.lostReason
  const lostWhy: 'expired' | 'taken' | 'unreachable' | undefined = (signal.reason as LockLostError).reason
  await lock.extend(1000)
  await lock.extend()
  await lock.release()
  await lock[Symbol.asyncDispose]()
  const maybe: Lock | null = await m.tryAcquire('name', { ttl: 10 })
  const n: number = await m.using('name', { ttl: 10 }, async (l: Lock, s: AbortSignal) => (s.aborted ? 0 : l.validity))
  const str: string = await m.using('name', () => 'sync result')
  await m.release(Buffer.from('name'), 'token')
  await m.close()
  await m[Symbol.asyncDispose]()
  const code: LockErrorCode = new NotAcquiredError('x').code
  const abortCode: 'ABORT_ERR' = new AbortError('x').code
  const e: LockError = new LockLostError('x', { cause: 1 })
  const opts: AcquireOptions = {}
  const invalid: TypeError = new InvalidArgumentError('x')
  const invalidCode: 'ERR_INVALID_ARG' = new InvalidArgumentError('x').code
  void [name, token, fence, validity, lost, signal, why, lostWhy, maybe, n, str, code, abortCode, e, opts, invalid, invalidCode]

  const options: LockManagerOptions = {
    connectTimeout: 500,
    tlsCaFile: 'ca.crt',
    tlsClientCert: 'client.crt',
    tlsClientKey: 'client.key',
    tlsInsecure: false,
  }
  const servers: string[] = new LockManager('rediss://h:6380', options).servers
  const closed: boolean = m.closed
  const off: () => boolean = onEvent((ev: FencelockEvent) => {
    const level: EventLevel = ev.level
    const lockName: string | undefined = ev.fields.lock
    void [level, lockName, ev.message.length]
  }, { level: 'trace' })
  off()
  void [servers, closed]
  // @ts-expect-error connectTimeout is a number of milliseconds
  new LockManager('redis://h', { connectTimeout: '5s' })
  // @ts-expect-error tlsInsecure is a boolean
  new LockManager('rediss://h', { tlsInsecure: 'yes' })
  // @ts-expect-error not a level
  onEvent(() => {}, { level: 'verbose' })
  // @ts-expect-error the listener gets an event, not a string
  onEvent((s: number) => s)

  // @ts-expect-error a name is a string or a Buffer
  await m.acquire(42)
  // @ts-expect-error ttl is a number of milliseconds
  await m.acquire('name', { ttl: '1000' })
  // @ts-expect-error tryAcquire takes no wait
  await m.tryAcquire('name', { wait: 10 })
  // @ts-expect-error fencingToken is a bigint
  const wrong: number = lock.fencingToken
  // @ts-expect-error Lock has no public constructor arguments to build one from
  new Lock('name')
  // @ts-expect-error servers are URLs
  new LockManager(6379)
  // @ts-expect-error the error code is one of the known codes
  const bad: LockErrorCode = 'ERR_SOMETHING'
  void [wrong, bad]
}
