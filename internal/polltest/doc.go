// Package polltest waits, in tests, for something that runs on the real
// clock (a goroutine, the agent's process, a containerd) to reach a state:
// it polls a condition until it holds, and fails the test once a deadline
// passes, with a message naming what was awaited, how long it waited and
// the last state the condition described.
//
// Holds is its converse: it fails the test as soon as a condition that
// must stay true for a while stops holding.
//
// It is the one poll-with-deadline of the repository's tests, unit and
// integration alike. A test whose code under test runs on a fake clock
// steps that clock instead; it may still poll with this package for the
// code to reach the clock (FakeClock.HasWaiters).
package polltest
