module github.com/raftlock/raftlock/examples/go

go 1.19

require github.com/raftlock/raftlock/clients/go v0.0.0

replace github.com/raftlock/raftlock/clients/go => ../../clients/go
