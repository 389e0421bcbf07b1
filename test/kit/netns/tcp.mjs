// A TCP stand-in for apps and proxies inside test netns:
//   serve PORT=LABEL...      answers each connection on PORT with LABEL; prints "ready"
//   connect HOST PORT        prints what the server answered, or "error:<code>"
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
} else {
  process.stderr.write("usage: tcp.mjs serve PORT=LABEL... | connect HOST PORT\n");
  process.exitCode = 2;
}
