// probe is what the real cluster's pods run, so that a redirect is proven with real TCP:
//
//	probe serve :8080=app :4143=proxy-inbound ...   answers each connection with one line:
//	                                                 "<banner> dst=<original destination> src=<peer's address>";
//	                                                 a banner ending in ">" (a proxy that forwards) connects on to the
//	                                                 original destination and appends " > <what that answered>"
//	probe connect HOST:PORT                          (an IPv6 HOST in brackets) prints the line the server answered, or fails (exit 1)
//	probe connect-each HOST:PORT...                  connects to all at once; prints "HOST:PORT<tab>answer" per target, in
//	                                                 the order given, the answer "error: ..." for a target that did not answer
//	probe squat PATH                                 holds a unix socket's path against its owner (squat.go)
//
// The original destination is what the kernel's REDIRECT rewrote (SO_ORIGINAL_DST): a
// connection to the app's port that a proxy listener answers, naming the app's address, is
// one that was redirected.
package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

const soOriginalDst = 80

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: probe serve ADDR=BANNER... | probe connect HOST:PORT | probe connect-each HOST:PORT... | probe squat PATH")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		for _, spec := range os.Args[2:] {
			addr, banner, ok := strings.Cut(spec, "=")
			if !ok {
				fmt.Fprintf(os.Stderr, "probe: %q is not ADDR=BANNER\n", spec)
				os.Exit(2)
			}
			listener, err := net.Listen("tcp", addr)
			if err != nil {
				fmt.Fprintln(os.Stderr, "probe:", err)
				os.Exit(1)
			}
			go serve(listener, banner)
		}
		select {}
	case "connect":
		line, err := dial(os.Args[2])
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Print(line)
	case "connect-each":
		targets := os.Args[2:]
		answers := make([]string, len(targets))
		var wg sync.WaitGroup
		for i, target := range targets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				line, err := dial(target)
				if err != nil {
					line = fmt.Sprint("error: ", err)
				}
				answers[i] = strings.TrimRight(line, "\n")
			}()
		}
		wg.Wait()
		for i, target := range targets {
			fmt.Printf("%s\t%s\n", target, answers[i])
		}
	case "squat":
		squat(os.Args[2])
	default:
		fmt.Fprintf(os.Stderr, "probe: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}

// dial connects to target and returns the line its server answered.
func dial(target string) (string, error) {
	conn, err := net.DialTimeout("tcp", target, 3*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	return bufio.NewReader(conn).ReadString('\n')
}

func serve(listener net.Listener, banner string) {
	name, forwards := strings.CutSuffix(banner, ">")
	for {
		conn, err := listener.Accept()
		if err != nil {
			continue
		}
		go answer(conn.(*net.TCPConn), name, forwards)
	}
}

// answer writes the listener's line; a forwarding one (a proxy) first connects on to the
// connection's original destination, as a proxy does, and appends what that answered:
// "<banner> dst=… src=… > <the next hop's line>". A connection that was not redirected to it
// (its original destination is the listener itself) has nowhere to go on to.
func answer(conn *net.TCPConn, banner string, forwards bool) {
	defer conn.Close()
	peer, _, _ := net.SplitHostPort(conn.RemoteAddr().String())
	dst := originalDst(conn)
	line := fmt.Sprintf("%s dst=%s src=%s", banner, dst, peer)
	if forwards && dst != conn.LocalAddr().String() {
		line += " > " + forward(dst)
	}
	fmt.Fprintln(conn, line)
}

// forwarding counts the onward connections in hand. A proxy whose own connections are
// redirected back to it (its UID not exempt) would forward each to itself again: past
// maxForwarding at once it says so instead, rather than using up the process's descriptors.
var forwarding atomic.Int32

const maxForwarding = 64

// forward connects on to dst and returns its line, within a shorter time than the client
// gives the whole chain, so an inner failure still reaches the client.
func forward(dst string) string {
	if forwarding.Add(1) > maxForwarding {
		forwarding.Add(-1)
		return "error: too many connections forwarded at once (a loop?)"
	}
	defer forwarding.Add(-1)
	conn, err := net.DialTimeout("tcp", dst, 2*time.Second)
	if err != nil {
		return fmt.Sprint("error: ", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Sprint("error: ", err)
	}
	return strings.TrimRight(line, "\n")
}

// originalDst is the destination the connection was sent to before any REDIRECT or DNAT
// (IPv4's SO_ORIGINAL_DST, IPv6's IP6T_SO_ORIGINAL_DST), or its local address where the
// kernel has none to tell. Go's listeners are dual-stack: an IPv4 peer's socket is IPv6 but
// conntrack knows it as IPv4, so the family asked is the peer's.
func originalDst(conn *net.TCPConn) string {
	raw, err := conn.SyscallConn()
	if err != nil {
		return conn.LocalAddr().String()
	}
	if conn.RemoteAddr().(*net.TCPAddr).IP.To4() == nil {
		var addr syscall.RawSockaddrInet6
		if getsockopt(raw, syscall.SOL_IPV6, unsafe.Pointer(&addr), unsafe.Sizeof(addr)) != nil || addr.Family != syscall.AF_INET6 {
			return conn.LocalAddr().String()
		}
		return net.JoinHostPort(net.IP(addr.Addr[:]).String(), fmt.Sprint(swap(addr.Port)))
	}
	var addr syscall.RawSockaddrInet4
	if getsockopt(raw, syscall.SOL_IP, unsafe.Pointer(&addr), unsafe.Sizeof(addr)) != nil || addr.Family != syscall.AF_INET {
		return conn.LocalAddr().String()
	}
	return fmt.Sprintf("%s:%d", net.IP(addr.Addr[:]), swap(addr.Port))
}

// getsockopt asks the socket for its original destination (option 80 at either level) into addr.
func getsockopt(raw syscall.RawConn, level int, addr unsafe.Pointer, size uintptr) error {
	var sockErr error
	_ = raw.Control(func(fd uintptr) {
		length := uint32(size)
		_, _, errno := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, uintptr(level), soOriginalDst,
			uintptr(addr), uintptr(unsafe.Pointer(&length)), 0)
		if errno != 0 {
			sockErr = errno
		}
	})
	return sockErr
}

// swap turns a port in network byte order into a number.
func swap(port uint16) int { return int(port>>8 | port<<8&0xff00) }
