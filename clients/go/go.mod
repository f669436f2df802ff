module github.com/raftlock/raftlock/clients/go

go 1.19
