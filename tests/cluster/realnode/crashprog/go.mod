module crashdoc.local/crashprog

go 1.26
