package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// squat takes over a unix socket's path, as a process with a hostPath to the agent's state
// dir could: it puts its own listener there whenever the path is not its own (every 50 ms,
// so the agent taking it back loses it again), and answers each question with "applied",
// the pod's result copied from the question's prevResult (what an ADD's runtime expects), so
// a plugin that believed it would leave the pod without its redirect. Each connection is
// printed as one JSON line: the bytes and descriptors the caller sent before it closed.
func squat(path string) {
	var own uint64
	for {
		var held syscall.Stat_t
		if syscall.Lstat(path, &held) != nil || held.Ino != own {
			_ = os.Remove(path)
			listener, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
			if err == nil {
				// Closed or not, the path is whoever's holds it then: never unlinked by this process.
				listener.SetUnlinkOnClose(false)
				if syscall.Lstat(path, &held) == nil {
					own = held.Ino
				}
				fmt.Printf("{\"squatting\":%q}\n", path)
				go accept(listener)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func accept(listener *net.UnixListener) {
	for {
		conn, err := listener.AcceptUnix()
		if err != nil {
			return
		}
		go answerAsAgent(conn)
	}
}

// answerAsAgent reads one question (with any descriptors passed along it) and answers it.
func answerAsAgent(conn *net.UnixConn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	buffer := make([]byte, 1<<20)
	oob := make([]byte, syscall.CmsgSpace(16*4))
	read, oobRead, _, _, _ := conn.ReadMsgUnix(buffer, oob)
	rights := 0
	if messages, err := syscall.ParseSocketControlMessage(oob[:oobRead]); err == nil {
		for _, message := range messages {
			if fds, err := syscall.ParseUnixRights(&message); err == nil {
				rights += len(fds)
				for _, fd := range fds {
					_ = syscall.Close(fd)
				}
			}
		}
	}
	if read > 0 {
		question := buffer[:read]
		if !bytes.ContainsRune(question, '\n') {
			rest, _ := bufio.NewReader(conn).ReadBytes('\n')
			question = append(question, rest...)
		}
		var asked struct{ Netconf string }
		var netconf struct {
			PrevResult json.RawMessage `json:"prevResult"`
		}
		if json.Unmarshal(question, &asked) == nil && json.Unmarshal([]byte(asked.Netconf), &netconf) == nil {
			answer, _ := json.Marshal(map[string]any{"applied": map[string]any{"result": netconf.PrevResult}})
			_, _ = conn.Write(append(answer, '\n'))
		}
	}
	fmt.Printf("{\"connection\":{\"bytes\":%d,\"rights\":%d}}\n", read, rights)
}
