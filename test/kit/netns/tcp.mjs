// A TCP stand-in for apps and proxies inside test netns:
//   serve PORT=LABEL...      answers each connection on PORT with LABEL; prints "ready"
//   connect HOST PORT        prints what the server answered, or "error:<code>"
//   probe HOST PORT          connects again and again, one at a time, until its stdin ends; prints
//                            how often each answer (or "error:<code>") came, as JSON
import net from "node:net";

const [mode, ...args] = process.argv.slice(2);
if (mode === "serve") {
  let pending = args.length;
  for (const spec of args) {
    const [port, label] = spec.split("=");
    // Every address, IPv6 and IPv4 (a netns without IPv6: IPv4 only).
    const server = net.createServer((socket) => socket.end(label));
    const ready = () => {
      if (--pending === 0) process.stdout.write("ready\n");
    };
    server.once("error", () => server.listen(Number(port), "0.0.0.0", ready));
    server.listen(Number(port), "::", ready);
  }
} else if (mode === "connect") {
  const [host, port] = args;
  let answer = "";
  const socket = net.connect({ host, port: Number(port), timeout: 3000 });
  socket.on("data", (chunk) => (answer += chunk));
  socket.on("end", () => process.stdout.write(answer));
  socket.on("timeout", () => {
    process.stdout.write("error:timeout");
    socket.destroy();
  });
  socket.on("error", (error) => {
    process.stdout.write(`error:${error.code}`);
    process.exitCode = 1;
  });
} else if (mode === "probe") {
  const [host, port] = args;
  const answerOnce = () =>
    new Promise((resolve) => {
      let answer = "";
      const socket = net.connect({ host, port: Number(port), timeout: 3000 });
      socket.on("data", (chunk) => (answer += chunk));
      socket.on("end", () => resolve(answer));
      socket.on("timeout", () => {
        socket.destroy();
        resolve("error:timeout");
      });
      socket.on("error", (error) => resolve(`error:${error.code}`));
    });
  let stopping = false;
  process.stdin.on("end", () => (stopping = true));
  process.stdin.resume();
  process.stdout.write("ready\n");
  const counts = {};
  while (!stopping) {
    const answer = await answerOnce();
    counts[answer] = (counts[answer] ?? 0) + 1;
    // A breath between connections: thousands a second would run through ephemeral ports and conntrack.
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  process.stdout.write(JSON.stringify(counts));
} else {
  process.stderr.write("usage: tcp.mjs serve PORT=LABEL... | connect HOST PORT | probe HOST PORT\n");
  process.exitCode = 2;
}
