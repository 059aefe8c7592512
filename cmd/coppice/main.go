// Command coppice runs the Coppice database service.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "coppice: the HTTP service is not built yet; use the engine package")
	os.Exit(2)
}
