// What run.mjs expects of node-redlock's own tests run against fencelock/compat/redlock: how
// many tests each file has, and which are expected to fail and why. docs/migrating.md
// ("Node: from node-redlock") lists the deliberate differences (none today);
// compat-redlock.test.mjs checks that it names each.

/** The tests of each vendored file (two namespaces, `instance` and `cluster`, each). */
export const TESTS = { single: 18, multi: 6 }

/**
 * Deliberate differences: tests expected to fail, with the reason (docs/migrating.md lists
 * each). None today: every test of both files passes on the drop-in.
 */
export const EXPECTED_FAILURES = []
