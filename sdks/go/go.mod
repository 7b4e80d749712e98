module regina.dev/sdk/go

go 1.22
