// The real cluster's test program (its pods' app, the proxy stand-in and the client): the standard library only.
module meshcni.test/cluster/probe

go 1.26.0
