"""PUBLISH throughput to N subscribers on one channel: 2,000 publishes in
pipelines of 100 from one connection; the subscribers do not read.

    python bench/pubsub_fanout.py PORT [SUBSCRIBERS]
"""
import sys, socket, time
port=int(sys.argv[1]); subs=[]
def enc(*a):
    out=b"*%d\r\n"%len(a)
    for x in a:
        x=x.encode(); out+=b"$%d\r\n%s\r\n"%(len(x),x)
    return out
for i in range(int(sys.argv[2]) if len(sys.argv)>2 else 500):
    s=socket.create_connection(("127.0.0.1",port)); s.sendall(enc("SUBSCRIBE","news")); subs.append(s)
time.sleep(1)
p=socket.create_connection(("127.0.0.1",port))
N=2000
batch=b"".join(enc("PUBLISH","news","x"*10) for _ in range(100))
t=time.time(); got=0
for _ in range(N//100):
    p.sendall(batch); buf=b""
    while buf.count(b"\r\n")<100: buf+=p.recv(65536)
    got+=100
dt=time.time()-t
print(f"{N/dt:.0f} publishes/s to {len(subs)} subscribers")
