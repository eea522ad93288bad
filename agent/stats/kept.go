package stats

// kept keeps up to a few values of T between requests: the buffers and
// writers a response needs, which a sync.Pool would drop at nearly each
// collection, and so make again at nearly every scrape. Safe for
// concurrent use; more values are made while more requests need them at
// once, and dropped after.
type kept[T any] struct {
	// free holds the values not in use; buffered, never closed.
	free chan T
}

func newKept[T any](n int) *kept[T] { return &kept[T]{free: make(chan T, n)} }

// get returns a kept value, or makes one.
func (k *kept[T]) get(make func() T) T {
	select {
	case v := <-k.free:
		return v
	default:
		return make()
	}
}

// put keeps v if fewer than the kept count are.
func (k *kept[T]) put(v T) {
	select {
	case k.free <- v:
	default:
	}
}
