module ducklake.test/pause

go 1.22
