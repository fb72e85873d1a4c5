package postgres

// FenceLockClass is fenceLockClass for the tests of package postgres_test,
// which hold a Fence under way by hand.
const FenceLockClass = fenceLockClass
