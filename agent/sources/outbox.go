package sources

// Outbox holds the snapshot a source waits to send, so that its Run loop
// never blocks on a busy receiver: while one waits, a newer snapshot
// replaces it, and a snapshot equal to the last one sent (by key) is not
// sent at all. The zero value is ready. Not safe for concurrent use: one
// source's Run loop owns it.
type Outbox struct {
	// pending is the snapshot waiting to be sent, nil when the last one
	// sent is current; pendingKey is its key.
	pending    *Update
	pendingKey string
	// sentKey is the key of the last snapshot sent; everSent is false
	// until the first one was.
	sentKey  string
	everSent bool
}

// Offer makes u, whose content key is key, the snapshot to send, unless
// it equals the last one sent; then nothing waits to be sent.
func (o *Outbox) Offer(u Update, key string) {
	if o.everSent && key == o.sentKey {
		o.pending, o.pendingKey = nil, ""
		return
	}
	o.pending, o.pendingKey = &u, key
}

// Pending returns the snapshot waiting to be sent, if any.
func (o *Outbox) Pending() (Update, bool) {
	if o.pending == nil {
		return Update{}, false
	}
	return *o.pending, true
}

// Sent records that the pending snapshot was sent.
func (o *Outbox) Sent() {
	o.sentKey, o.everSent = o.pendingKey, true
	o.pending, o.pendingKey = nil, ""
}
