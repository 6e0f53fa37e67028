// What run.mjs expects of node-redlock's own tests run against fencelock/compat/redlock: how
// many tests each file has, and which are expected to fail and why. docs/migrating.md
// ("Node: from node-redlock") lists the deliberate differences (none today);
// compat-redlock.test.mjs checks that it names each.
//
// An entry with `needs` fails only while the fencelock build lacks that feature (run.mjs
// probes for it): once the feature is there, the test must pass. An entry without `needs` is
// a deliberate difference.

/** The tests of each vendored file (two namespaces, `instance` and `cluster`, each). */
export const TESTS = { single: 18, multi: 6 }

/** Features the core is getting (issue 25), and how run.mjs tells whether this build has them. */
export const FEATURES = {
  acquireMany: 'LockManager.acquireMany (multi-name locks, issue 25 item 6)',
  servers: "err.servers on a failed acquire (each server's outcome, issue 25 item 9)",
}

const both = (title) => [`instance - ${title}`, `cluster - ${title}`]

export const EXPECTED_FAILURES = [
  ...both('acquires, extends, and releases a multi-resource lock').map((test) => ({
    file: 'single',
    test,
    needs: 'acquireMany',
    reason: 'locks two resources at once; without multi-name locks in the core the drop-in refuses a multi-resource acquire (a clear TypeError) rather than take the names one by one',
  })),
  ...both('overlapping multi-locks are exclusive').map((test) => ({
    file: 'single',
    test,
    needs: 'acquireMany',
    reason: 'the same: a multi-resource acquire',
  })),
  ...both('locks fail when redis is unreachable').map((test) => ({
    file: 'single',
    test,
    needs: 'servers',
    reason: "reads each attempt's votes against (`Connection is closed.` per server); without err.servers the drop-in cannot say which server said what, and counts every client against with fencelock's UnavailableError",
  })),
  ...both('individual locks are exclusive').map((test) => ({
    file: 'single',
    test,
    needs: 'servers',
    reason: 'checks that every vote against is a ResourceLockedError; without err.servers the votes carry fencelock\'s NotAcquiredError',
  })),
  ...both('fails when a majority of clients fail').map((test) => ({
    file: 'multi',
    test,
    needs: 'servers',
    reason: 'checks each vote against (a ResourceLockedError "applied to: 0 of the 1 requested resources"); without err.servers the drop-in knows only that the quorum was not reached',
  })),
]
