package io.sparkkinesis.source

import org.scalatest.funsuite.AnyFunSuite

class AdmissionPlannerSuite extends AnyFunSuite {
  private def keys(n: Int) = (0 until n).map(i => ShardKey("s", f"shardId-$i%012d"))

  test("without a trigger limit every shard gets maxFetchRecordsPerShard and no byte limit") {
    val b = AdmissionPlanner.budgets(keys(3), 5, 100L, None, None)
    assert(b.values.toSet == Set(ShardBudget(100L, None)))
    assert(AdmissionPlanner.admitted(keys(3), 5, None) == keys(3))
  }

  test(
    "the record limit is split evenly, differs by at most one, sums to the limit, and rotates the remainder"
  ) {
    for (n <- 1 to 7; limit <- Seq(7L, 10L, 23L, 100L); batch <- 0L to 8L if limit >= n) {
      val b = AdmissionPlanner.budgets(keys(n), batch, Long.MaxValue, Some(limit), None)
      val shares = b.values.map(_.maxRecords)
      assert(shares.sum == limit, s"n=$n limit=$limit batch=$batch")
      assert(shares.max - shares.min <= 1)
    }
    val owners = (0L until 4L).map { batch =>
      AdmissionPlanner
        .budgets(keys(4), batch, Long.MaxValue, Some(9L), None)
        .collect {
          case (k, b) if b.maxRecords == 3 => k
        }
        .toSet
    }
    assert(owners.toSet.size == 4, "the extra record goes to a different shard in each batch")
  }

  test("maxFetchRecordsPerShard still caps a shard's share") {
    val b = AdmissionPlanner.budgets(keys(2), 0, 10L, Some(1000L), None)
    assert(b.values.map(_.maxRecords).toSet == Set(10L))
  }

  test("a record limit below the shard count reads that many shards, in rotation, one record each") {
    val all = keys(5)
    val rounds = (0L until 5L).map(batch => AdmissionPlanner.admitted(all, batch, Some(2L)))
    assert(rounds.forall(_.size == 2))
    assert(rounds.flatten.toSet == all.toSet, "every shard gets its turn")
    val b = AdmissionPlanner.budgets(rounds.head, 0, 100L, Some(2L), None)
    assert(b.values.map(_.maxRecords).toSet == Set(1L))
  }

  test("the byte limit is split evenly, at least one byte each") {
    val b = AdmissionPlanner.budgets(keys(4), 0, 100L, None, Some(1000L))
    assert(b.values.map(_.maxBytes).toSet == Set(Some(250L)))
    assert(AdmissionPlanner.budgets(keys(4), 0, 100L, None, Some(2L)).values.forall(_.maxBytes.contains(1L)))
  }

  test("the same offset and limits give the same budgets (planning and task building agree)") {
    val a = AdmissionPlanner.budgets(keys(6).reverse, 3, 50L, Some(31L), Some(999L))
    val b = AdmissionPlanner.budgets(keys(6), 3, 50L, Some(31L), Some(999L))
    assert(a == b)
    assert(AdmissionPlanner.budgets(Nil, 3, 50L, Some(31L), None).isEmpty)
  }
}
