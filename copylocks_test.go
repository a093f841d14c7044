package work

import (
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// lockerType is sync.Locker: go vet's copylocks check flags a copy of any value whose type, or a
// field of it held by value, has Lock and Unlock methods (sync.Mutex, sync.WaitGroup and the
// sync/atomic types all do, through their pointers).
var lockerType = reflect.TypeOf((*sync.Locker)(nil)).Elem()

// lockPath returns the path to a lock held by value in t ("" when none), as copylocks finds it:
// through struct fields and arrays, not through pointers, slices, maps or interfaces.
func lockPath(t reflect.Type, path string) string {
	if reflect.PointerTo(t).Implements(lockerType) {
		return path + " (" + t.String() + ")"
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if p := lockPath(f.Type, path+"."+f.Name); p != "" {
				return p
			}
		}
	case reflect.Array:
		return lockPath(t.Elem(), path+"[0]")
	}
	return ""
}

// TestValuesHoldNoLocks keeps WorkerPool, Client and Job free of locks held by value: gocraft/work's
// held none, and its users copy them (Harbor reads a pool's ID with reflect.ValueOf(*pool)), so a lock
// in one would make go vet fail on their code after the switch.
func TestValuesHoldNoLocks(t *testing.T) {
	for _, v := range []interface{}{WorkerPool{}, Client{}, Job{}} {
		typ := reflect.TypeOf(v)
		if p := lockPath(typ, typ.Name()); p != "" {
			t.Errorf("%s holds a lock by value at %s: copying it fails go vet's copylocks check", typ.Name(), p)
		}
	}
	// The walk finds the locks it is meant to find.
	if lockPath(reflect.TypeOf(Enqueuer{}), "Enqueuer") == "" {
		t.Error("lockPath found no lock in Enqueuer, which holds a sync.Mutex")
	}
}

// TestCopyingValuesVetsClean runs go vet on a program that copies a WorkerPool, a Client and a Job
// as gocraft/work's users do.
func TestCopyingValuesVetsClean(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command(goBin, "vet", "./testdata/copylocks").CombinedOutput()
	if err != nil {
		t.Fatalf("go vet ./testdata/copylocks: %v\n%s", err, strings.TrimSpace(string(out)))
	}
}

// setWire copies every exported field of Job: a field added to Job and left out of it would be lost
// when a worker decodes a payload through encoding/json.
func TestSetWireCopiesEveryExportedField(t *testing.T) {
	var w jobWire
	v := reflect.ValueOf(&w).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if !v.Type().Field(i).IsExported() {
			continue
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Int64:
			f.SetInt(7)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Map:
			f.Set(reflect.ValueOf(map[string]interface{}{"a": 1.0}))
		case reflect.Slice:
			f.SetBytes([]byte("r"))
		default:
			t.Fatalf("field %s of kind %s: teach this test to set it", v.Type().Field(i).Name, f.Kind())
		}
	}
	var j Job
	j.setWire(&w)
	got := reflect.ValueOf(j)
	for i := 0; i < got.NumField(); i++ {
		if !got.Type().Field(i).IsExported() {
			continue
		}
		if !reflect.DeepEqual(got.Field(i).Interface(), v.Field(i).Interface()) {
			t.Errorf("setWire left %s out", got.Type().Field(i).Name)
		}
	}
}
