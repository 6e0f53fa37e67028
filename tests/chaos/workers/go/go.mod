module github.com/fencelock/fencelock/tests/chaos/workers/go

go 1.22

require github.com/fencelock/fencelock/bindings-go v0.0.0

replace github.com/fencelock/fencelock/bindings-go => ../../../../bindings-go
