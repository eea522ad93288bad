package manifest

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// quantityRangeMsg is why a quantity too large for the node is refused.
const quantityRangeMsg = "must be at most 9223372036854775807 (2^63-1), and for cpu at most 9223372036854775807m: a node counts resources in 64-bit integers (bytes, millicores)"

// validateQuantityRange refuses a quantity whose value (in millicores for
// cpu, else in units) does not fit in an int64. The API server accepts
// such a quantity, but the kubelet reads it as 0 or a negative number (a
// memory limit of 1e9999 is no limit), and comparing it with another
// takes time and memory that grow with its exponent: 1e999999999 takes
// minutes. It is checked before any comparison.
func validateQuantityRange(q resource.Quantity, milli bool, path *field.Path) field.ErrorList {
	if quantityFits(q, milli) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, quantityText(q), quantityRangeMsg)}
}

// quantityFits reports whether q, times 1000 when milli, is at most
// math.MaxInt64 in magnitude, without scaling q (which costs as much as
// its exponent is large).
func quantityFits(q resource.Quantity, milli bool) bool {
	d := q.AsDec() // q is a copy: AsDec may convert it, not the caller's
	unscaled := d.UnscaledBig()
	bits := unscaled.BitLen()
	if bits == 0 {
		return true
	}
	// |q| = |unscaled| * 10^-scale, and |unscaled| has between low and
	// high decimal digits.
	scale := int64(d.Scale())
	if milli {
		scale -= 3
	}
	high := int64(float64(bits)*math.Log10(2)) + 1
	low := int64(float64(bits-1)*math.Log10(2)) + 1
	switch {
	case high-scale <= 18: // below 10^18
		return true
	case low-1-scale >= 19: // at least 10^19
		return false
	}
	// Close to the bound: scale is within a few digits of the number's
	// length, so scaling is cheap.
	v := new(big.Int).Abs(unscaled)
	limit := big.NewInt(math.MaxInt64)
	ten := big.NewInt(10)
	if scale < 0 {
		v.Mul(v, new(big.Int).Exp(ten, big.NewInt(-scale), nil))
	} else {
		limit.Mul(limit, new(big.Int).Exp(ten, big.NewInt(scale), nil))
	}
	return v.Cmp(limit) <= 0
}

// quantityText is q as errors quote it: its text, unless it has so many
// digits that printing it would take long.
func quantityText(q resource.Quantity) string {
	d := q.AsDec()
	if bits := d.UnscaledBig().BitLen(); bits > 4*maxQuantityLen {
		return "a number of " + strconv.Itoa(int(float64(bits)*math.Log10(2))+1) + " digits"
	}
	return q.String()
}

// Divisors of a downward API resource, as the API server accepts them.
var (
	cpuDivisors    = sets.New("1m", "1")
	memoryDivisors = sets.New("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
)

// validateDivisor checks the divisor of a downward API resource (such as
// limits.memory), as the API server does; an unset divisor is 1.
func validateDivisor(res string, divisor resource.Quantity, path *field.Path) field.ErrorList {
	if divisor.IsZero() {
		return nil
	}
	_, name, _ := strings.Cut(res, ".")
	switch {
	case !quantityFits(divisor, false):
		return field.ErrorList{field.Invalid(path, quantityText(divisor), quantityRangeMsg)}
	case name == string(v1.ResourceCPU):
		if !cpuDivisors.Has(divisor.String()) {
			return field.ErrorList{field.Invalid(path, divisor.String(), "only divisor's values 1m and 1 are supported with the cpu resource")}
		}
	case name == string(v1.ResourceMemory), name == string(v1.ResourceEphemeralStorage), strings.HasPrefix(name, v1.ResourceHugePagesPrefix):
		if !memoryDivisors.Has(divisor.String()) {
			return field.ErrorList{field.Invalid(path, divisor.String(), "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the "+name+" resource")}
		}
	}
	return nil
}

// validateResourceList checks that each quantity of a pod-level list
// (spec.overhead, spec.resources) fits and is not negative.
func validateResourceList(l v1.ResourceList, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedNames(l) {
		errs = append(errs, validateQuantity(l[name], name == v1.ResourceCPU, path.Key(string(name)))...)
	}
	return errs
}

// validateQuantity checks that q fits (see validateQuantityRange) and is
// not negative.
func validateQuantity(q resource.Quantity, milli bool, path *field.Path) field.ErrorList {
	if errs := validateQuantityRange(q, milli, path); len(errs) > 0 {
		return errs
	}
	return validateResourceQuantity(q, path)
}
