// The billing example from the article this project grew from (Portuguese edition): a Go
// program that takes an etcd lock with clientv3 + concurrency so one customer is never charged
// twice. raftlock's Go client must let it run against raftlock with only its imports and the
// package names in front of New/Config/NewSession/NewMutex changed.
package main

import (
    "context"
    "fmt"
    "log"
    "time"

    "github.com/raftlock/raftlock/clients/go"
)

func main() {
    cli, err := raftlock.New(raftlock.Config{
        Endpoints:   []string{"http://127.0.0.1:2379"},
        DialTimeout: 5 * time.Second,
    })
    if err != nil {
        log.Fatalf("Falha ao conectar: %v", err)
    }
    defer cli.Close()

    s, err := raftlock.NewSession(cli)
    if err != nil {
        log.Fatalf("Falha na sessão: %v", err)
    }
    defer s.Close()

    mutex := raftlock.NewMutex(s, "/faturamento-lock")

    ctx := context.TODO()
    if err := mutex.Lock(ctx); err != nil {
        log.Fatalf("Erro ao adquirir o lock: %v", err)
    }
    fmt.Println("Lock adquirido com sucesso. Executando tarefa crítica...")

    time.Sleep(2 * time.Second)

    if err := mutex.Unlock(ctx); err != nil {
        log.Fatalf("Erro ao liberar o lock: %v", err)
    }
    fmt.Println("Lock liberado com segurança.")
}
