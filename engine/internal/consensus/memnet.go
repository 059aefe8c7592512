package consensus

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// Network is an in-process network for tests. Hosts whose Config.Network is
// the same Network exchange Raft messages and snapshots through memory, with
// their RaftAddr as a plain name, and the test can cut links between them to
// simulate a partition: Raft messages across a cut link vanish, as in a
// network that drops packets, and snapshot streams across it fail. It is safe
// for concurrent use.
type Network struct {
	mu    sync.Mutex
	hosts map[string]*memTransport
	// known holds every address that ever started, running or not.
	known map[string]bool
	// cut holds each blocked direction as from → to.
	cut map[[2]string]bool
}

// NewNetwork returns a network with no hosts and no cut links.
func NewNetwork() *Network {
	return &Network{hosts: map[string]*memTransport{}, known: map[string]bool{}, cut: map[[2]string]bool{}}
}

// Partition cuts every link between a host in side and any other host that
// has started on the network, in both directions. Links cut before stay cut.
func (n *Network) Partition(side ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	in := map[string]bool{}
	for _, a := range side {
		in[a] = true
	}
	for b := range n.known {
		if in[b] {
			continue
		}
		for _, a := range side {
			n.cut[[2]string{a, b}] = true
			n.cut[[2]string{b, a}] = true
		}
	}
}

// Cut blocks the one direction from → to.
func (n *Network) Cut(from, to string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[[2]string{from, to}] = true
}

// Heal restores every cut link.
func (n *Network) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.cut)
}

// blocked reports whether from → to is cut.
func (n *Network) blocked(from, to string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cut[[2]string{from, to}]
}

// lookup returns the host listening on addr, if any.
func (n *Network) lookup(addr string) *memTransport {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hosts[addr]
}

// errCutLink and errNoHost are what a sender sees for a snapshot chunk
// across a cut link and for an address nobody listens on.
var (
	errCutLink = errors.New("consensus: link cut")
	errNoHost  = errors.New("consensus: no host at address")
)

// factory plugs the network into dragonboat's NodeHostConfig.
func (n *Network) factory() config.TransportFactory { return memFactory{n} }

// memFactory creates one memTransport per host.
type memFactory struct{ net *Network }

// Create makes the transport of the host configured by cfg.
func (f memFactory) Create(cfg config.NodeHostConfig, h raftio.MessageHandler, ch raftio.ChunkHandler) raftio.ITransport {
	return &memTransport{net: f.net, addr: cfg.RaftAddress, handler: h, chunks: ch, done: make(chan struct{})}
}

// Validate accepts any non-empty name as an address.
func (memFactory) Validate(addr string) bool { return addr != "" }

// memTransport is one host's end of a Network.
type memTransport struct {
	net     *Network
	addr    string
	handler raftio.MessageHandler
	chunks  raftio.ChunkHandler
	// done closes when the transport closes; deliveries to it stop.
	done      chan struct{}
	closeOnce sync.Once
	// wg counts the pumps of the connections this transport opened.
	wg sync.WaitGroup
	// recv is held shared by each delivery to this transport and
	// exclusively by Close, so that no handler runs after Close returns;
	// closed is guarded by it.
	recv   sync.RWMutex
	closed bool
}

// deliver runs f, a call of a handler of t, unless t is closed.
func (t *memTransport) deliver(f func() bool) bool {
	t.recv.RLock()
	defer t.recv.RUnlock()
	if t.closed {
		return false
	}
	return f()
}

// Name identifies the transport in dragonboat's logs.
func (t *memTransport) Name() string { return "coppice-memnet" }

// Start registers the host's address on the network.
func (t *memTransport) Start() error {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	if _, ok := t.net.hosts[t.addr]; ok {
		return fmt.Errorf("consensus: address %q already in use", t.addr)
	}
	t.net.hosts[t.addr] = t
	t.net.known[t.addr] = true
	return nil
}

// Close unregisters the address and waits for deliveries in progress.
func (t *memTransport) Close() error {
	t.net.mu.Lock()
	if t.net.hosts[t.addr] == t {
		delete(t.net.hosts, t.addr)
	}
	t.net.mu.Unlock()
	t.closeOnce.Do(func() { close(t.done) })
	t.recv.Lock()
	t.closed = true
	t.recv.Unlock()
	t.wg.Wait()
	return nil
}

// GetConnection opens a message stream to target: a queue drained in order
// by one goroutine, as a TCP connection would be.
func (t *memTransport) GetConnection(ctx context.Context, target string) (raftio.IConnection, error) {
	to := t.net.lookup(target)
	if to == nil {
		return nil, errNoHost
	}
	c := &memConn{from: t, to: to, q: make(chan []byte, 64), done: make(chan struct{})}
	t.wg.Add(1)
	go c.pump()
	return c, nil
}

// GetSnapshotConnection opens a snapshot stream to target.
func (t *memTransport) GetSnapshotConnection(ctx context.Context, target string) (raftio.ISnapshotConnection, error) {
	to := t.net.lookup(target)
	if to == nil {
		return nil, errNoHost
	}
	return &memSnapConn{from: t, to: to}, nil
}

// memConn carries message batches from one host to another.
type memConn struct {
	from, to  *memTransport
	q         chan []byte
	done      chan struct{}
	closeOnce sync.Once
}

// Close stops the stream; batches still queued are dropped.
func (c *memConn) Close() { c.closeOnce.Do(func() { close(c.done) }) }

// SendMessageBatch queues a copy of the batch, or drops it across a cut link.
func (c *memConn) SendMessageBatch(b pb.MessageBatch) error {
	if c.from.net.blocked(c.from.addr, c.to.addr) {
		return nil
	}
	data, err := b.Marshal()
	if err != nil {
		return err
	}
	select {
	case c.q <- data:
		return nil
	case <-c.done:
		return errNoHost
	case <-c.to.done:
		return errNoHost
	case <-c.from.done:
		return errNoHost
	}
}

// pump delivers queued batches in order until either end closes. A batch
// queued before a link was cut is dropped too.
func (c *memConn) pump() {
	defer c.from.wg.Done()
	for {
		select {
		case data := <-c.q:
			if c.from.net.blocked(c.from.addr, c.to.addr) {
				continue
			}
			var b pb.MessageBatch
			if err := b.Unmarshal(data); err != nil {
				continue
			}
			c.to.deliver(func() bool { c.to.handler(b); return true })
		case <-c.done:
			return
		case <-c.to.done:
			return
		case <-c.from.done:
			return
		}
	}
}

// memSnapConn carries snapshot chunks, delivered synchronously.
type memSnapConn struct{ from, to *memTransport }

// Close has nothing to release.
func (c *memSnapConn) Close() {}

// SendChunk hands a copy of the chunk to the receiver, or fails across a cut
// link so that the sender retries the snapshot later.
func (c *memSnapConn) SendChunk(ch pb.Chunk) error {
	if c.from.net.blocked(c.from.addr, c.to.addr) {
		return errCutLink
	}
	data, err := ch.Marshal()
	if err != nil {
		return err
	}
	var cp pb.Chunk
	if err := cp.Unmarshal(data); err != nil {
		return err
	}
	if !c.to.deliver(func() bool { return c.to.chunks(cp) }) {
		return fmt.Errorf("consensus: %s refused a snapshot chunk", c.to.addr)
	}
	return nil
}
