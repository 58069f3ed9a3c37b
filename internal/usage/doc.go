// Package usage renders the usage API's answer (trainyard.v1.UsageRow) as
// CSV, for chargeback: the REST gateway answers it to Accept: text/csv
// (or format=csv), and tyctl usage --csv prints the same bytes, so a
// spreadsheet made from either has the same columns.
//
//	start,end,tenant[,creator][,label:<key>...],gpuHours,cpuHours,memoryGibHours,gpuHoursUsed,gpuHoursIdle
//
// Columns are the JSON field names; creator and one label:<key> column per
// grouped label appear only when the query grouped by them, in the query's
// order. Times are RFC 3339 in UTC; numbers are the shortest decimal that
// reads back as the same double, as in the JSON answer, so the two agree
// to the last digit.
package usage
