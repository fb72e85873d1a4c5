package testkit

import "sync"

// Race runs fn(0) … fn(n-1), each in a goroutine of its own, all let go
// at once by one signal (not started one after the other), and returns
// their errors, errs[i] from fn(i), once every one has returned.
func Race(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start // every goroutine races from one signal
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}
