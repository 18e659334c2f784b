module example.test/sleeper

go 1.26.0
