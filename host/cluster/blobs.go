package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"atelier/host/store"
)

// blobBucket is the object store of large values that log entries refer to by SHA-256: code
// (up to 32 MiB), blueprints' code, gatekeeper archives, and entries too large for the log.
// Blobs are never deleted yet: entries of the log may refer to them until compaction purges
// those entries, and nothing collects the blobs no entry refers to any more.
const blobBucket = "ATL_BLOBS"

// blobs stores and fetches content-addressed blobs.
type blobs struct {
	obs jetstream.ObjectStore
	log *slog.Logger
}

func openBlobs(ctx context.Context, n *Node) (*blobs, error) {
	obs, err := n.objectStore(ctx, blobBucket, "Atelier code and large log entries, by SHA-256")
	if err != nil {
		return nil, err
	}
	return &blobs{obs: obs, log: n.log}, nil
}

// put stores data unless a blob with its SHA-256 exists, and returns the SHA-256.
func (b *blobs) put(ctx context.Context, data []byte) (string, error) {
	sha := store.CodeSHA(data)
	if _, err := b.obs.GetInfo(ctx, sha); err == nil {
		return sha, nil
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return "", fmt.Errorf("store blob %s: %w", sha, err)
	}
	if _, err := b.obs.PutBytes(ctx, sha, data); err != nil {
		return "", fmt.Errorf("store blob %s: %w", sha, err)
	}
	return sha, nil
}

// get returns the blob with the given SHA-256. A log entry is published only after its blobs
// were stored, but this node's copy of the blob store may lag behind the log's, so a missing
// or unreadable blob is read again until ctx ends.
func (b *blobs) get(ctx context.Context, sha string) ([]byte, error) {
	start, wait := time.Now(), 10*time.Millisecond
	warned := false
	for {
		data, err := b.obs.GetBytes(ctx, sha)
		if err == nil {
			if got := store.CodeSHA(data); got != sha {
				err = fmt.Errorf("content has SHA-256 %s", got)
			} else {
				return data, nil
			}
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("read blob %s: %w", sha, err)
		}
		if !warned && time.Since(start) > 10*time.Second {
			b.log.Warn("a blob the log refers to is still unreadable", "sha256", sha, "err", err)
			warned = true
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		wait = min(2*wait, time.Second)
	}
}
