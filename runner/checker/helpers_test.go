package checker

import (
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/workload"
)

// Builders for planted histories. Times are in milliseconds from the base;
// every operation is on key "k" unless on() moves it, and sent by workload
// "w" unless by() says otherwise.

func entry(client int, op, value string, found bool, call, ret int) Entry {
	return Entry{Workload: "w", HistoryOp: workload.HistoryOp{
		ClientID: client, Op: op, Key: "k", Value: []byte(value), Found: found,
		Call: time.Duration(call) * time.Millisecond, Return: time.Duration(ret) * time.Millisecond,
	}}
}

func put(client int, value string, call, ret int) Entry {
	return entry(client, plan.OpPut, value, false, call, ret)
}

func txn(client int, value string, call, ret int) Entry {
	return entry(client, plan.OpTxn, value, false, call, ret)
}

func del(client int, call, ret int) Entry { return entry(client, plan.OpDelete, "", false, call, ret) }

func get(client int, value string, call, ret int) Entry {
	return entry(client, plan.OpGet, value, true, call, ret)
}

func getAbsent(client int, call, ret int) Entry {
	return entry(client, plan.OpGet, "", false, call, ret)
}

func (e Entry) failed(class string) Entry { e.Class = class; return e }
func (e Entry) on(key string) Entry       { e.Key = key; return e }
func (e Entry) by(name string) Entry      { e.Workload = name; return e }
