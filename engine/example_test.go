package engine_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/coppice-db/coppice/engine"
)

// Example is the shortest way to embed the engine: open a data directory,
// create a database (no accounts needed: it belongs to no workspace), give
// it a table, insert records and query them.
func Example() {
	dir, err := os.MkdirTemp("", "coppice-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	e, err := engine.Open(dir, engine.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	if _, err := e.CreateDatabase(engine.CreateDatabaseRequest{Name: "shop", Region: "local"}); err != nil {
		log.Fatal(err)
	}
	main := engine.Ref{Database: "shop", Branch: "main"}
	if _, err := e.Schema().CreateTable(main, "products"); err != nil {
		log.Fatal(err)
	}
	if _, err := e.Schema().SetTableColumns(main, "products", []engine.ColumnDef{
		{Name: "name", Type: engine.TypeString},
		{Name: "price", Type: engine.TypeFloat},
	}); err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	if _, err := e.BulkInsert(ctx, main, "products", []map[string]any{
		{"id": "lamp", "name": "Desk lamp", "price": 24.5},
		{"id": "mug", "name": "Mug", "price": 8.0},
		{"id": "pen", "name": "Pen", "price": 1.5},
	}); err != nil {
		log.Fatal(err)
	}
	res, err := e.Query(ctx, main, "products", engine.QueryRequest{
		Filter: engine.FilterOf(map[string]any{"price": map[string]any{"$ge": 2}}),
		Sort:   engine.SortOf(map[string]any{"price": "desc"}),
	}, engine.QueryOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, doc := range res.Records {
		fmt.Printf("%-4s %-9s %5.2f\n", doc.ID, doc.Values["name"], doc.Values["price"])
	}
	// Output:
	// lamp Desk lamp 24.50
	// mug  Mug        8.00
}

// Example_branches writes and reads records, then forks a branch and
// changes it while main goes on independently.
func Example_branches() {
	dir, err := os.MkdirTemp("", "coppice-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}

	e, err := engine.Open(dir, engine.Options{})
	check(err)
	defer e.Close()

	// A database starts with one branch, main. (The HTTP service keeps
	// databases in workspaces of its accounts, e.Accounts().)
	_, err = e.CreateDatabase(engine.CreateDatabaseRequest{Name: "shop", Region: "local"})
	check(err)
	main := engine.Ref{Database: "shop", Branch: "main"}

	_, err = e.Schema().CreateTable(main, "products")
	check(err)
	_, err = e.Schema().SetTableColumns(main, "products", []engine.ColumnDef{
		{Name: "name", Type: engine.TypeString, NotNull: true},
		{Name: "price", Type: engine.TypeFloat},
		{Name: "stock", Type: engine.TypeInt},
	})
	check(err)

	// One bulk insert is one batch: all records or none.
	_, err = e.BulkInsert(context.Background(), main, "products", []map[string]any{
		{"id": "lamp", "name": "Desk lamp", "price": 24.5, "stock": int64(12)},
		{"id": "mug", "name": "Mug", "price": 8.0, "stock": int64(40)},
	})
	check(err)
	// An id left out is generated.
	res, err := e.WriteOne(main, engine.Op{Kind: engine.OpInsert, Table: "products",
		Values: map[string]any{"name": "Notebook", "price": 3.2}})
	check(err)
	fmt.Println("generated id:", res.ID != "")

	// Fork main: the branch sees main's records as of now, whatever their
	// number, without copying them.
	sale := engine.Ref{Database: "shop", Branch: "sale"}
	check(e.Branches().Create(sale, engine.CreateBranchRequest{From: "main"}))

	_, err = e.WriteOne(sale, engine.Op{Kind: engine.OpUpdate, Table: "products", ID: "lamp",
		Values: map[string]any{"price": 19.99}})
	check(err)
	_, err = e.WriteOne(sale, engine.Op{Kind: engine.OpDelete, Table: "products", ID: "mug"})
	check(err)
	// Main keeps its own history: the branch does not see this sale.
	_, err = e.WriteOne(main, engine.Op{Kind: engine.OpUpdate, Table: "products", ID: "lamp",
		Values: map[string]any{"stock": map[string]any{"$decrement": int64(1)}}})
	check(err)

	for _, ref := range []engine.Ref{main, sale} {
		for _, id := range []string{"lamp", "mug"} {
			rec, err := e.Get(ref, "products", id)
			if engine.CodeOf(err) == engine.CodeNotFound {
				fmt.Printf("%-4s %-4s not found\n", ref.Branch, id)
				continue
			}
			check(err)
			v := rec.Values
			fmt.Printf("%-4s %-4s %-9s %5.2f %3d in stock\n", ref.Branch, id, v["name"], v["price"], v["stock"])
		}
	}
	// Output:
	// generated id: true
	// main lamp Desk lamp 24.50  11 in stock
	// main mug  Mug        8.00  40 in stock
	// sale lamp Desk lamp 19.99  12 in stock
	// sale mug  not found
}
