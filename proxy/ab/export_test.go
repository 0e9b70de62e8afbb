package ab

// SetRotateHook makes every crossover rotation call f with each loop's
// position in the poller line, for the end-to-end tests (package ab_test)
// that inject a cost into one position; nil removes it.
func SetRotateHook(f func(arms []int)) { rotateHook = f }
