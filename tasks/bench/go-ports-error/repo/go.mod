module example.com/ports

go 1.19
