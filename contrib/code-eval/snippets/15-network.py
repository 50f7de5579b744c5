# expect: ok
# only loopback exists; the outside world is unreachable
import socket
try:
    socket.create_connection(("1.1.1.1", 80), timeout=2)
    print("reached the internet")
except OSError as e:
    print("outbound connection failed:", e)
srv = socket.create_server(("127.0.0.1", 0))
c = socket.create_connection(srv.getsockname())
s, _ = srv.accept()
c.sendall(b"ping")
print("loopback:", s.recv(4).decode())
