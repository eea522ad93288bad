package sources

import "testing"

func TestOutbox(t *testing.T) {
	var o Outbox
	if _, ok := o.Pending(); ok {
		t.Fatal("a new outbox has something pending")
	}
	o.Offer(Update{Source: File}, "a")
	if u, ok := o.Pending(); !ok || u.Source != File {
		t.Fatalf("Pending = %+v %v after Offer", u, ok)
	}
	// A newer snapshot replaces the waiting one.
	o.Offer(Update{Source: HTTP}, "b")
	if u, _ := o.Pending(); u.Source != HTTP {
		t.Fatalf("Pending = %+v, want the newer snapshot", u)
	}
	o.Sent()
	if _, ok := o.Pending(); ok {
		t.Fatal("still pending after Sent")
	}
	// The same content as last sent is not sent again; other content is,
	// and so is the sent content after a different one waited.
	o.Offer(Update{}, "b")
	if _, ok := o.Pending(); ok {
		t.Error("a snapshot equal to the last one sent is pending")
	}
	o.Offer(Update{}, "c")
	o.Offer(Update{}, "b")
	if _, ok := o.Pending(); ok {
		t.Error("returning to the sent content left a snapshot pending")
	}
	// The first snapshot is sent even if its key is empty.
	var first Outbox
	first.Offer(Update{}, "")
	if _, ok := first.Pending(); !ok {
		t.Error("the first snapshot, with an empty key, is not pending")
	}
}
