package ports

import (
	"reflect"
	"testing"
)

func TestParseReadsPorts(t *testing.T) {
	got, err := Parse("80, 443,,8080")
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{80, 443, 8080}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestParseRefusesOutOfRange(t *testing.T) {
	if _, err := Parse("70000"); err == nil {
		t.Fatal("no error for 70000")
	}
}
