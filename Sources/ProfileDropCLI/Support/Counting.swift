/// `1 violation`, `3 violations`, `2 breaches`: a count with its noun, for one-line messages.
func counted(_ number: Int, _ noun: String, plural: String? = nil) -> String {
    "\(number) \(number == 1 ? noun : plural ?? noun + "s")"
}
